"""Export the model zoo (tests/zoo/) with torch and write a ground-truth JSON beside each export.

Run by hand or with `make zoo` (which creates .venv-zoo with torch==2.13.0, onnxscript, transformers, onnx and
onnxruntime). Never run by `make test`: the tests read only the committed files.

    .venv-zoo/bin/python scripts/gen_zoo.py [NAME ...]

Every model is built from a tiny random-init configuration under a fixed seed, exported, checked against torch
in onnxruntime, and described by `NAME.truth.json`. The truth is computed from torch (the FX graph the exporter
recorded, `nn_module_stack`, the module instances and their hyperparameters), never from inspector code; the
few facts read from the ONNX file (which FX nodes emitted ONNX nodes; the op histogram of plain TorchScript
exports) are read with plain `onnx` and marked as such. tests/zoo/README.md says what is compared and how.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import math
import os
import re
import site
import sys
import sysconfig
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import torch
from torch import nn

REPO = Path(__file__).resolve().parents[1]
ZOO = REPO / "tests" / "zoo"
SEED = 0
OPSET = 20  # torch 2.13's dynamo default (torch.onnx._constants.ONNX_DEFAULT_OPSET); used for TorchScript too
MAX_FILE = 1_000_000
MAX_TOTAL = 12_000_000
FX_NODE = "pkg.torch.onnx.fx_node"
_FX_NAME = re.compile(r"^%([^\s:]+) :")


# --------------------------------------------------------------------------------------------
# plain torch models
# --------------------------------------------------------------------------------------------


class ConvNet(nn.Module):
    """Conv + BatchNorm + ReLU stem, two residual blocks (one with a strided 1x1 shortcut), pools, a head."""

    def __init__(self, c: int = 8, classes: int = 10) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU())
        self.pool = nn.MaxPool2d(2)
        self.block1 = ResBlock(c, c, 1)
        self.block2 = ResBlock(c, 2 * c, 2)
        self.avg = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(2 * c, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(self.stem(x))
        x = self.block2(self.block1(x))
        return self.fc(torch.flatten(self.avg(x), 1))


class ResBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.short: nn.Module = (
            nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))
            if stride != 1 or cin != cout else nn.Identity()
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + self.short(x))


class MixerBlock(nn.Module):
    def __init__(self, tokens: int, dim: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.token_mlp = nn.Sequential(nn.Linear(tokens, 2 * tokens), nn.GELU(), nn.Linear(2 * tokens, tokens))
        self.norm2 = nn.LayerNorm(dim)
        self.channel_mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.token_mlp(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel_mlp(self.norm2(x))


class Mixer(nn.Module):
    """MLP-mixer: patch embedding by a strided conv, token- and channel-mixing MLPs, mean pooling."""

    def __init__(self, image: int = 16, patch: int = 4, dim: int = 24, depth: int = 2, classes: int = 10) -> None:
        super().__init__()
        tokens = (image // patch) ** 2
        self.patch = nn.Conv2d(3, dim, patch, stride=patch)
        self.blocks = nn.ModuleList([MixerBlock(tokens, dim) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch(x).flatten(2).transpose(1, 2)
        for b in self.blocks:
            x = b(x)
        return self.head(self.norm(x).mean(dim=1))


class DepthwiseNet(nn.Module):
    """Depthwise-separable and grouped convolutions (MobileNet's, ConvNeXt's): a 7x7 depthwise conv (groups =
    channels) then LayerNorm and a pointwise MLP on channels-last, a grouped strided conv (groups 2) with ReLU6, a cat
    of three tensors, a 1-D depthwise conv, a head."""

    def __init__(self, c: int = 8, classes: int = 10) -> None:
        super().__init__()
        self.patch = nn.Conv2d(3, c, 2, stride=2)
        self.dw = nn.Conv2d(c, c, 7, padding=3, groups=c)
        self.norm = nn.LayerNorm(c)
        self.pw1 = nn.Linear(c, 4 * c)
        self.pw2 = nn.Linear(4 * c, c)
        self.grouped = nn.Conv2d(c, 2 * c, 3, stride=2, padding=1, groups=2)
        self.dw1d = nn.Conv1d(2 * c, 2 * c, 3, padding=1, groups=2 * c)
        self.head = nn.Linear(2 * c, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch(x)
        y = self.dw(x).permute(0, 2, 3, 1)
        y = self.pw2(nn.functional.gelu(self.pw1(self.norm(y)))).permute(0, 3, 1, 2)
        x = nn.functional.relu6(self.grouped(x + y))
        x = torch.cat([x, torch.tanh(x), torch.sigmoid(x)], dim=-1)  # (a Concat of three: cat's template has two)
        return self.head(self.dw1d(x.flatten(2)).mean(-1))


class PadNet(nn.Module):
    """An image-to-image generator as CycleGAN's and fast style transfer's are built: reflection padding before each
    unpadded convolution, instance norm, a residual block, nearest upsampling, a replicate-padded output convolution,
    and a ``repeat`` of channels (a grey image made three); the pads are ``F.pad`` of mode reflect and replicate,
    which the exporter keeps as ``aten::pad``."""

    def __init__(self, c: int = 8) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.ReflectionPad2d(3), nn.Conv2d(1, c, 7), nn.InstanceNorm2d(c, affine=True),
                                  nn.ReLU())
        self.down = nn.Conv2d(c, 2 * c, 3, stride=2, padding=1)
        self.block = nn.Sequential(nn.ReflectionPad2d(1), nn.Conv2d(2 * c, 2 * c, 3), nn.InstanceNorm2d(2 * c),
                                   nn.ReLU(), nn.ReflectionPad2d(1), nn.Conv2d(2 * c, 2 * c, 3),
                                   nn.InstanceNorm2d(2 * c))
        self.out = nn.Sequential(nn.ReplicationPad2d(1), nn.Conv2d(2 * c, 1, 3), nn.Tanh())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.down(self.stem(x)))
        y = y + self.block(y)
        y = nn.functional.interpolate(y, scale_factor=2.0, mode="nearest")
        return self.out(y).repeat(1, 3, 1, 1)


class CondModel(nn.Module):
    """`torch.cond` on a data-dependent predicate: two branches with different modules and ops."""

    def __init__(self, d: int = 16) -> None:
        super().__init__()
        self.inp = nn.Linear(d, d)
        self.pos = nn.Linear(d, d)
        self.neg = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, d))
        self.out = nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.inp(x)

        def true_fn(h: torch.Tensor) -> torch.Tensor:
            return torch.relu(self.pos(h)) * 2.0

        def false_fn(h: torch.Tensor) -> torch.Tensor:
            return torch.tanh(self.neg(h)) - 1.0

        h = torch.cond(h.sum() > 0, true_fn, false_fn, (h,))
        return self.out(h)


class Attention(nn.Module):
    """Multi-head self-attention with explicit view/transpose and SDPA (optionally an explicit scale)."""

    def __init__(self, d: int, heads: int, scale: float | None = None) -> None:
        super().__init__()
        self.heads = heads
        self.scale = scale
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        if self.scale is None:
            y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, scale=self.scale)
        return self.proj(y.transpose(1, 2).reshape(b, s, d))


class Mlp(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(d, 2 * d)
        self.fc2 = nn.Linear(2 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(nn.functional.gelu(self.fc1(x)))


class Block(nn.Module):
    """Pre-norm residual block: LayerNorm(eps) + Mlp (no attention inside, so Block and Attention are siblings)."""

    def __init__(self, d: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.norm = nn.LayerNorm(d, eps=eps)
        self.mlp = Mlp(d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.mlp(self.norm(x))


class TinyTransformer(nn.Module):
    """Alternating Attention and Block modules; every hyperparameter is per instance."""

    def __init__(self, d: int, heads: list[int], eps: list[float], scale: float | None = None,
                 vocab: int = 64) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.attns = nn.ModuleList([Attention(d, h, scale) for h in heads])
        self.blocks = nn.ModuleList([Block(d, e) for e in eps])
        self.head = nn.Linear(d, vocab)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        for attn, block in zip(self.attns, self.blocks):
            x = block(x + attn(x))
        return self.head(x)


class SplitHeads(nn.Module):
    """view to (b, s, h, d/h), transpose(dim0, dim1), a per-head projection, and back."""

    def __init__(self, d: int, heads: int, dims: tuple[int, int]) -> None:
        super().__init__()
        self.heads = heads
        self.dims = dims
        self.inp = nn.Linear(d, d)
        self.out = nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        h = self.inp(x).view(b, s, self.heads, d // self.heads).transpose(*self.dims)
        h = torch.softmax(h, dim=-1) * h
        return self.out(h.transpose(*self.dims).reshape(b, s, d))


class TransposeNet(nn.Module):
    def __init__(self, d: int, dims: tuple[int, int]) -> None:
        super().__init__()
        self.layers = nn.ModuleList([SplitHeads(d, 2, dims) for _ in range(2)])
        self.norm = nn.LayerNorm(d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = x + layer(x)
        return self.norm(x)


class EpsNet(nn.Module):
    def __init__(self, d: int, eps: float) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([Block(d, eps) for _ in range(2)])
        self.norm = nn.LayerNorm(d, eps=eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for b in self.blocks:
            x = b(x)
        return self.norm(x)


class MLPBlock(nn.Module):
    """``x + fc2(gelu(fc1(x)))``; with ``extra``, the activation adds its input back (``h + gelu(h)``)."""

    def __init__(self, d: int, extra: bool) -> None:
        super().__init__()
        self.fc1 = nn.Linear(d, 2 * d)
        self.fc2 = nn.Linear(2 * d, d)
        self.extra = extra

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc1(x)
        h = h + nn.functional.gelu(h) if self.extra else nn.functional.gelu(h)
        return x + self.fc2(h)


class ResidualMLP(nn.Module):
    """Two residual MLP blocks. With ``extra`` each has an add before its residual add in graph order, so torch
    numbers the residual adds otherwise: ``add`` and ``add_1`` without, ``add_1`` and ``add_3`` with (an FX name
    says which call it is only among exports of one FX graph)."""

    def __init__(self, d: int, extra: bool) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([MLPBlock(d, extra) for _ in range(2)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for b in self.blocks:
            x = b(x)
        return x


# --------------------------------------------------------------------------------------------
# the zoo
# --------------------------------------------------------------------------------------------


@dataclass
class InputSpec:
    name: str
    shape: list[int]
    dtype: str  # "int64" | "float32"
    high: int | None = None  # ints are drawn from [0, high)

    def make(self, gen: torch.Generator) -> torch.Tensor:
        if self.dtype == "int64":
            assert self.high is not None
            return torch.randint(0, self.high, self.shape, generator=gen, dtype=torch.int64)
        return torch.randn(self.shape, generator=gen, dtype=torch.float32)


@dataclass
class Entry:
    name: str
    kind: str  # dynamo | dynamo-noopt | torchscript-functions | torchscript
    build: Callable[[], nn.Module]
    inputs: list[InputSpec]
    config: dict[str, Any]
    description: str
    kwargs_inputs: bool = False  # pass inputs as keyword arguments (HF models)
    extra_kwargs: dict[str, Any] = field(default_factory=dict)
    dynamic: dict[str, dict[int, str]] | None = None  # input name -> {dim: Dim name}
    functions: tuple[type[nn.Module], ...] = ()
    hyper: tuple[str, ...] = ()  # per-instance hyperparameters to record for module functions
    pair: dict[str, Any] | None = None


def hf(cls_name: str, cfg_name: str, cfg: dict[str, Any], **extra: Any) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        import transformers

        config = getattr(transformers, cfg_name)(**cfg, **extra)
        return getattr(transformers, cls_name)(config)
    return build


GPT2 = dict(vocab_size=64, n_positions=32, n_embd=32, n_layer=2, n_head=2, n_inner=64,
            bos_token_id=0, eos_token_id=0)
BERT = dict(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
            max_position_embeddings=32, type_vocab_size=2, pad_token_id=0)
VIT = dict(image_size=16, patch_size=4, num_channels=3, hidden_size=32, num_hidden_layers=2,
           num_attention_heads=2, intermediate_size=64)
LLAMA = dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=32, bos_token_id=0, eos_token_id=0, pad_token_id=0)
T5 = dict(vocab_size=64, d_model=32, d_kv=8, d_ff=64, num_layers=1, num_decoder_layers=1, num_heads=4,
          relative_attention_num_buckets=8, relative_attention_max_distance=16, decoder_start_token_id=0,
          pad_token_id=0, eos_token_id=1)
WHISPER = dict(vocab_size=64, num_mel_bins=8, d_model=32, encoder_layers=1, decoder_layers=1,
               encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64,
               max_source_positions=16, max_target_positions=16, pad_token_id=0, bos_token_id=0,
               eos_token_id=1, decoder_start_token_id=0, begin_suppress_tokens=None, suppress_tokens=None)


def _ids(name: str = "input_ids", shape: tuple[int, ...] = (1, 8), high: int = 64) -> InputSpec:
    return InputSpec(name, list(shape), "int64", high)


def entries() -> list[Entry]:
    tt = dict(d=32, heads=[2, 4, 2], eps=[1e-5, 1e-6, 1e-5])
    return [
        Entry("gpt2", "dynamo", hf("GPT2LMHeadModel", "GPT2Config", GPT2), [_ids()], GPT2,
              "HF GPT-2 LM head, 2 layers", True, {"use_cache": False}),
        Entry("gpt2_dynamic", "dynamo", hf("GPT2LMHeadModel", "GPT2Config", GPT2), [_ids(shape=(2, 8))], GPT2,
              "HF GPT-2 with dynamic batch and sequence (dynamic_shapes)", True, {"use_cache": False},
              dynamic={"input_ids": {0: "batch", 1: "seq"}}),
        Entry("bert", "dynamo", hf("BertModel", "BertConfig", BERT),
              [_ids(), InputSpec("attention_mask", [1, 8], "int64", 2)], BERT,
              "HF BERT encoder with attention mask", True),
        Entry("bert_noopt", "dynamo-noopt", hf("BertModel", "BertConfig", BERT),
              [_ids(), InputSpec("attention_mask", [1, 8], "int64", 2)], BERT,
              "HF BERT, dynamo optimize=False", True),
        Entry("vit", "dynamo", hf("ViTModel", "ViTConfig", VIT), [InputSpec("pixel_values", [1, 3, 16, 16], "float32")],
              VIT, "HF ViT, 16x16 image, patch 4", True),
        Entry("llama_gqa", "dynamo", hf("LlamaForCausalLM", "LlamaConfig", LLAMA), [_ids()], LLAMA,
              "HF Llama with grouped-query attention (4 heads, 2 KV heads)", True, {"use_cache": False}),
        Entry("llama_gqa_noopt", "dynamo-noopt", hf("LlamaForCausalLM", "LlamaConfig", LLAMA), [_ids()], LLAMA,
              "HF Llama GQA, dynamo optimize=False", True, {"use_cache": False}),
        Entry("t5", "dynamo", hf("T5ForConditionalGeneration", "T5Config", T5, attn_implementation="eager"),
              [_ids(), _ids("decoder_input_ids", (1, 4))], T5, "HF T5 (eager attention), encoder-decoder", True,
              {"use_cache": False}),
        Entry("t5_noopt", "dynamo-noopt",
              hf("T5ForConditionalGeneration", "T5Config", T5, attn_implementation="eager"),
              [_ids(), _ids("decoder_input_ids", (1, 4))], T5, "HF T5 (eager attention), dynamo optimize=False",
              True, {"use_cache": False}),
        Entry("whisper", "dynamo", hf("WhisperForConditionalGeneration", "WhisperConfig", WHISPER),
              [InputSpec("input_features", [1, 8, 32], "float32"), _ids("decoder_input_ids", (1, 4))], WHISPER,
              "HF Whisper: conv front end, encoder, decoder with cross-attention", True, {"use_cache": False}),
        Entry("convnet", "dynamo", ConvNet, [InputSpec("x", [2, 3, 16, 16], "float32")], {"c": 8, "classes": 10},
              "conv net: Conv/BatchNorm/ReLU, max and adaptive-average pools, residual blocks"),
        Entry("dwconv", "dynamo", DepthwiseNet, [InputSpec("x", [1, 3, 16, 16], "float32")], {"c": 8, "classes": 10},
              "depthwise (groups = channels) and grouped convolutions, 2-D and 1-D; a cat of three tensors"),
        Entry("padnet", "dynamo", PadNet, [InputSpec("x", [1, 1, 16, 16], "float32")], {"c": 8},
              "image-to-image generator: reflection and replicate padding, instance norm, nearest upsampling, repeat"),
        Entry("mixer", "dynamo", Mixer, [InputSpec("x", [1, 3, 16, 16], "float32")],
              {"image": 16, "patch": 4, "dim": 24, "depth": 2}, "MLP-mixer"),
        Entry("cond", "dynamo", CondModel, [InputSpec("x", [2, 16], "float32")], {"d": 16},
              "torch.cond with modules in both branches (ONNX If)"),
        Entry("tiny_noopt", "dynamo-noopt", lambda: TinyTransformer(**tt), [_ids("ids")], tt,  # type: ignore[arg-type]
              "custom transformer (Attention/Block siblings), dynamo optimize=False"),
        Entry("ts_functions", "torchscript-functions", lambda: TinyTransformer(**tt), [_ids("ids")], tt,  # type: ignore[arg-type]
              "TorchScript export_modules_as_functions={Attention, Block}: heads 2/4/2, eps 1e-5/1e-6/1e-5",
              functions=(Attention, Block), hyper=("heads", "eps", "scale")),
        Entry("ts_plain", "torchscript", ConvNet, [InputSpec("x", [2, 3, 16, 16], "float32")],
              {"c": 8, "classes": 10}, "plain TorchScript export of the conv net"),
        Entry("ts_plain_mixer", "torchscript", Mixer, [InputSpec("x", [1, 3, 16, 16], "float32")],
              {"image": 16, "patch": 4, "dim": 24, "depth": 2}, "plain TorchScript export of the MLP-mixer"),
        *pair("heads", lambda v: TinyTransformer(32, [v, v], [1e-5, 1e-5]), 2, 4, [_ids("ids")],
              "TinyTransformer, 2 Attention layers: heads 2 vs 4"),
        *pair("eps", lambda v: EpsNet(32, v), 1e-5, 1e-6, [InputSpec("x", [1, 8, 32], "float32")],
              "EpsNet: LayerNorm eps 1e-5 vs 1e-6 (3 LayerNorms)"),
        *pair("transpose", lambda v: TransposeNet(32, v), (1, 2), (1, 3), [InputSpec("x", [1, 8, 32], "float32")],
              "TransposeNet: view(b, s, 2, d/2).transpose(1, 2) vs .transpose(1, 3)"),
        *pair("scale", lambda v: TinyTransformer(32, [4, 2], [1e-5, 1e-5], scale=v), None, 0.3, [_ids("ids")],
              "TinyTransformer (heads 4, 2): SDPA default scale vs explicit scale=0.3"),
        # not a pair of one hyperparameter: the FX graph differs, and a call more renumbers the calls after it
        Entry("renumber_a", "dynamo", lambda: ResidualMLP(16, False), [InputSpec("x", [1, 4, 16], "float32")],
              {"extra": False}, "ResidualMLP: gelu(h) in each block (against renumber_b)"),
        Entry("renumber_b", "dynamo", lambda: ResidualMLP(16, True), [InputSpec("x", [1, 4, 16], "float32")],
              {"extra": True}, "ResidualMLP: h + gelu(h) in each block, an add before each residual add, which "
              "renumbers them (add_1, add_3 for renumber_a's add, add_1)"),
    ]


def pair(what: str, make: Callable[[Any], nn.Module], a: Any, b: Any, inputs: list[InputSpec],
         description: str) -> list[Entry]:
    out = []
    for suffix, value, other in (("a", a, "b"), ("b", b, "a")):
        out.append(Entry(f"pair_{what}_{suffix}", "dynamo", (lambda v=value: make(v)), inputs, {what: value},
                         description, pair={"hyperparameter": what, "value": value,
                                            "other": f"pair_{what}_{other}", "other_value": b if suffix == "a" else a}))
    return out


# --------------------------------------------------------------------------------------------
# export
# --------------------------------------------------------------------------------------------


def target_name(target: Any) -> str:
    """`aten::transpose.int` for OpOverloads (`.default` omitted, as torch's schema names do)."""
    if isinstance(target, torch._ops.OpOverload):
        name = target._schema.name
        ov = target._overloadname
        return name if ov in ("", "default") else f"{name}.{ov}"
    if isinstance(target, torch._ops.HigherOrderOperator):
        return f"higher_order::{target.name()}"
    name = torch.fx.node._get_qualified_name(target)  # `_operator.add`: printed `operator.add` in fx_node texts
    return "operator." + name[len("_operator."):] if name.startswith("_operator.") else name


_COND_ARGS = re.compile(r"args = \(%[^,]+, %([^,]+), %([^,]+),")


def graphs(g: onnx.GraphProto, label: str = "") -> Iterator[tuple[onnx.GraphProto, str]]:
    """Every graph with the FX graph it came from: "" for the main graph; an If branch of a `torch.cond` call
    is labelled with the FX submodule its fx_node text names (`true_graph_0` ...), others with "?"."""
    yield g, label
    for n in g.node:
        branches: dict[str, str] = {}
        if n.op_type == "If":
            fx = next((p.value for p in n.metadata_props if p.key == FX_NODE), "")
            m = _COND_ARGS.search(fx)
            if m:
                branches = {"then_branch": m.group(1), "else_branch": m.group(2)}
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from graphs(a.g, branches.get(a.name, "?"))
            elif a.type == onnx.AttributeProto.GRAPHS:
                for sg in a.graphs:
                    yield from graphs(sg, "?")


def all_nodes(model: onnx.ModelProto) -> Iterator[tuple[onnx.NodeProto, str]]:
    """Every node with the label of its graph (see `graphs`); function bodies are labelled "function"."""
    for g, label in graphs(model.graph):
        for n in g.node:
            yield n, label
    for f in model.functions:
        for n in f.node:
            yield n, "function"
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    for g, _ in graphs(a.g, "function"):
                        for m in g.node:
                            yield m, "function"


def normalise_paths(model: onnx.ModelProto) -> None:
    """Stack traces: absolute venv / repo prefixes become `site-packages/` and repo-relative paths."""
    prefixes = []
    for p in {*site.getsitepackages(), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}:
        prefixes.append((os.path.realpath(p) + os.sep, "site-packages/"))
        prefixes.append((p.rstrip(os.sep) + os.sep, "site-packages/"))
    prefixes += [(str(REPO) + os.sep, ""), (os.path.realpath(REPO) + os.sep, "")]
    prefixes.sort(key=lambda kv: -len(kv[0]))

    def fix(text: str) -> str:
        for old, new in prefixes:
            text = text.replace(old, new)
        return text

    for n, _ in all_nodes(model):
        for p in n.metadata_props:
            p.value = fix(p.value)
        n.doc_string = fix(n.doc_string)
    model.doc_string = fix(model.doc_string)


def module_stack(node: torch.fx.Node) -> list[str]:
    stack = node.meta.get("nn_module_stack") or {}
    return [v[0] for v in stack.values()]


def fx_truth(ep: torch.export.ExportedProgram) -> list[dict[str, Any]]:
    """Every call_function node of the exported program, including those of control-flow subgraphs."""
    out: list[dict[str, Any]] = []
    for gname, gm in ep.graph_module.named_modules():
        if not isinstance(gm, torch.fx.GraphModule):
            continue
        for node in gm.graph.nodes:
            if node.op != "call_function":
                continue
            stack = module_stack(node)
            out.append({"graph": gname, "name": node.name, "target": target_name(node.target),
                        "module": stack[-1] if stack else "", "module_stack": stack, "args": bound_args(node)})
    return out


def encode(v: Any) -> Any:
    """An FX argument as JSON: other FX nodes (tensors, symbolic sizes) as {"node": name}."""
    if isinstance(v, torch.fx.Node):
        return {"node": v.name}
    if isinstance(v, (list, tuple)):
        return [encode(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return str(v)  # dtype, device, layout, memory format ...


def bound_args(node: torch.fx.Node) -> dict[str, Any] | None:
    """This FX node's arguments keyed by the aten schema's parameter names (torch's own schema binding: position
    i of args is schema argument i, then kwargs by name, then the schema's defaults, whose names are listed under
    "(defaults)"); None for targets without a schema."""
    if not isinstance(node.target, torch._ops.OpOverload):
        return None
    params = node.target._schema.arguments
    out: dict[str, Any] = {}
    defaulted = []
    for i, a in enumerate(params):
        if i < len(node.args):
            out[a.name] = encode(node.args[i])
        elif a.name in node.kwargs:
            out[a.name] = encode(node.kwargs[a.name])
        elif a.has_default_value():
            out[a.name] = encode(a.default_value)
            defaulted.append(a.name)
    out["(defaults)"] = defaulted
    unknown = set(node.kwargs) - {a.name for a in params}
    assert not unknown and len(node.args) <= len(params), (node.format_node(), unknown)
    return out


def emitted_names(model: onnx.ModelProto) -> tuple[Counter[tuple[str, str]], dict[tuple[str, str], str]]:
    """(FX graph, FX name) -> number of ONNX nodes whose fx_node metadata names it; plain onnx only."""
    counts: Counter[tuple[str, str]] = Counter()
    raw_targets: dict[tuple[str, str], str] = {}
    for n, label in all_nodes(model):
        for p in n.metadata_props:
            if p.key == FX_NODE:
                m = _FX_NAME.match(p.value)
                if m:
                    counts[(label, m.group(1))] += 1
                    t = re.search(r"target=([^\]]+)\]", p.value)
                    raw_targets[(label, m.group(1))] = t.group(1) if t else ""
    return counts, raw_targets


def versions() -> dict[str, str]:
    import onnxscript
    import transformers

    return {"torch": torch.__version__, "transformers": transformers.__version__,
            "onnxscript": onnxscript.__version__, "onnx": onnx.__version__}


def jsonable(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    return v


def call_order(model: nn.Module, classes: tuple[type[nn.Module], ...], args: tuple[Any, ...],
               kwargs: dict[str, Any]) -> list[str]:
    """Paths of the instances of `classes`, in the order forward calls them (forward pre-hooks)."""
    paths = {id(m): p for p, m in model.named_modules()}
    order: list[str] = []
    hooks = [m.register_forward_pre_hook(lambda mod, _a: order.append(paths[id(mod)]))
             for m in model.modules() if isinstance(m, classes)]
    with torch.no_grad():
        model(*args, **kwargs)
    for h in hooks:
        h.remove()
    return order


def export_one(e: Entry, vers: dict[str, str], zoo: Path = ZOO) -> dict[str, Any]:
    torch.manual_seed(SEED)
    model = e.build().eval()
    gen = torch.Generator().manual_seed(SEED)
    tensors = [spec.make(gen) for spec in e.inputs]
    if e.kwargs_inputs:
        args: tuple[Any, ...] = ()
        kwargs = {s.name: t for s, t in zip(e.inputs, tensors)} | e.extra_kwargs
    else:
        args, kwargs = tuple(tensors), dict(e.extra_kwargs)
    path = zoo / f"{e.name}.onnx"
    truth: dict[str, Any] = {
        "name": e.name, "file": path.name, "kind": e.kind, "description": e.description,
        "versions": vers, "opset": OPSET, "seed": SEED,
        "config": jsonable(e.config), "model_class": f"{type(model).__module__}.{type(model).__qualname__}",
        "inputs": [{"name": s.name, "shape": s.shape, "dtype": s.dtype, "high": s.high} for s in e.inputs],
        "input_generation": "torch.Generator().manual_seed(seed); per input in order: int64 -> "
                            "torch.randint(0, high, shape), float32 -> torch.randn(shape)",
    }
    if e.pair:
        truth["pair"] = jsonable(e.pair)
    logging.getLogger("torch.onnx._internal.exporter._registration").setLevel(logging.ERROR)
    quiet = contextlib.redirect_stdout(io.StringIO())
    if e.kind.startswith("dynamo"):
        dyn = None
        if e.dynamic:
            dims = {n: torch.export.Dim(n, min=1, max=32) for d in e.dynamic.values() for n in d.values()}
            dyn = {name: {i: dims[n] for i, n in d.items()} for name, d in e.dynamic.items()}
            dyn |= {k: None for k in e.extra_kwargs}
            truth["dynamic_shapes"] = jsonable(e.dynamic)
        with warnings.catch_warnings(), quiet:
            warnings.simplefilter("ignore")
            prog = torch.onnx.export(model, args, kwargs=kwargs, dynamo=True, optimize=e.kind == "dynamo",
                                     dynamic_shapes=dyn, external_data=False, verbose=False)
        assert prog is not None
        proto = prog.model_proto
        ep = prog.exported_program
        assert ep is not None
        fx = fx_truth(ep)
        # consistency check (not truth): every fx_node name in the ONNX file is an FX node of `ep` with the
        # same target, so `ep` is the graph the exporter recorded
        emitted, raw = emitted_names(proto)
        by_name = {(f["graph"], f["name"]): f for f in fx}
        assert len(by_name) == len(fx)
        for key in emitted:
            assert key in by_name, f"{e.name}: ONNX names FX node {key} that the exported program lacks"
            got = raw[key]
            if got.startswith("torch.ops."):
                assert target_name(eval_target(got.removeprefix("torch.ops."))) == by_name[key]["target"], key
            else:
                assert got == by_name[key]["target"], (key, got, by_name[key]["target"])
        for f in fx:
            f["onnx_nodes"] = emitted.get((f["graph"], f["name"]), 0)
        truth["fx_graph"] = "ONNXProgram.exported_program: torch.export.export(strict=False) + the exporter's " \
                            "own decomposition table"
        truth["fx_nodes"] = fx
        truth["fx_target_counts"] = dict(sorted(Counter(f["target"] for f in fx).items()))
        truth["module_paths"] = sorted({p for f in fx for p in f["module_stack"]} - {""})
        truth["module_classes"] = {p: f"{type(m).__module__}.{type(m).__qualname__}"
                                   for p, m in model.named_modules() if p in set(truth["module_paths"])}
        truth["default_decompositions_differ"] = default_decomp_check(e, ep, args, kwargs, dyn)
    else:
        onnx_file = io.BytesIO()
        order: list[str] = []
        if e.functions:
            order = call_order(model, e.functions, args, kwargs)
        with warnings.catch_warnings(), quiet:
            warnings.simplefilter("ignore")
            torch.onnx.export(model, args, onnx_file, kwargs=kwargs or None, dynamo=False, opset_version=OPSET,
                              input_names=[s.name for s in e.inputs], output_names=["output"],
                              export_modules_as_functions=set(e.functions) if e.functions else False)
        proto = onnx.load_from_string(onnx_file.getvalue())
        # the exporter lists the functions in the iteration order of a set of classes, which varies from run
        # to run; sort them so that the file is reproducible (their order has no meaning)
        funcs_sorted = sorted(proto.functions, key=lambda f: (f.domain, f.name, f.overload))
        del proto.functions[:]
        proto.functions.extend(funcs_sorted)
        if e.functions:
            mods = dict(model.named_modules())
            funcs = []
            for cls in e.functions:
                inst = [p for p in order if isinstance(mods[p], cls)]
                funcs.append({
                    "class": f"{cls.__module__}.{cls.__qualname__}", "domain": cls.__module__,
                    "name": cls.__qualname__, "calls": len(inst),
                    "instances": [{"path": p, **{h: getattr(mods[p], h) for h in e.hyper
                                                 if hasattr(mods[p], h)}} for p in inst],
                    "nested_in_other_function_class": any(
                        isinstance(mods[q], e.functions) and p.startswith(q + ".") for p in inst for q in mods if q),
                })
            truth["module_functions"] = funcs
            truth["module_function_rule"] = (
                "calls = instances of the class called by forward (forward pre-hooks); domain = the class's "
                "__module__, name = its __qualname__; the exporter adds variants name.1, name.2 ... for instances "
                "whose bodies differ, in one family")
        main_hist = Counter((n.domain, n.op_type) for n in proto.graph.node)
        all_hist = Counter((n.domain, n.op_type) for n, _ in all_nodes(proto))
        truth["op_histogram_main_from_onnx"] = [{"domain": d, "op_type": o, "count": c}
                                                for (d, o), c in sorted(main_hist.items())]
        truth["op_histogram_all_from_onnx"] = [{"domain": d, "op_type": o, "count": c}
                                               for (d, o), c in sorted(all_hist.items())]
        truth["op_histogram_note"] = "read from the ONNX file with plain onnx (TorchScript has no torch-side " \
                                     "grouping): main graph only, and every node at any depth (function bodies " \
                                     "included)"
    normalise_paths(proto)
    data = proto.SerializeToString(deterministic=True)
    assert len(data) < MAX_FILE, f"{path.name} is {len(data)} bytes"
    onnx.checker.check_model(proto, full_check=True)
    check_ort(e, model, proto, args, kwargs, tensors)
    path.write_bytes(data)
    truth["onnx"] = {"ir_version": proto.ir_version,
                     "opsets": {o.domain: o.version for o in proto.opset_import},
                     "main_graph_nodes": len(proto.graph.node), "functions": len(proto.functions),
                     "bytes": len(data),
                     "graph_inputs": [i.name for i in proto.graph.input]}
    (zoo / f"{e.name}.truth.json").write_text(json.dumps(truth, indent=1, sort_keys=False) + "\n")
    return truth


def eval_target(dotted: str) -> Any:
    """`aten.transpose.int` -> the OpOverload; `higher_order.cond` -> the higher-order operator."""
    obj: Any = torch.ops
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def default_decomp_check(e: Entry, ep: torch.export.ExportedProgram, args: tuple[Any, ...],
                         kwargs: dict[str, Any], dyn: Any) -> dict[str, Any] | None:
    """How `torch.export.export(strict=False).run_decompositions()` (default table) differs from `ep`."""
    if e.name not in ("gpt2", "t5_noopt", "convnet"):
        return None
    torch.manual_seed(SEED)
    model = e.build().eval()
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        other = torch.export.export(model, args, kwargs, strict=False, dynamic_shapes=dyn).run_decompositions()
    a = Counter(f["target"] for f in fx_truth(ep))
    b = Counter(f["target"] for f in fx_truth(other))
    return {"only_in_exporter_graph": dict(sorted((a - b).items())),
            "only_in_default_run_decompositions": dict(sorted((b - a).items()))}


def check_ort(e: Entry, model: nn.Module, proto: onnx.ModelProto, args: tuple[Any, ...], kwargs: dict[str, Any],
              tensors: list[torch.Tensor]) -> None:
    import onnxruntime as ort

    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    feeds = {s.name: t.numpy() for s, t in zip(e.inputs, tensors) if s.name in names}
    assert set(feeds) == set(names), (names, list(feeds))
    got = sess.run(None, feeds)[0]
    with torch.no_grad():
        out = model(*args, **kwargs)
    want = out if isinstance(out, torch.Tensor) else (out[0] if isinstance(out, (tuple, list)) else
                                                       next(iter(out.values())))
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-3, atol=1e-4)


def main(argv: Iterable[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help="only these zoo entries")
    opts = ap.parse_args(list(argv) if argv is not None else None)
    torch.use_deterministic_algorithms(True)
    ZOO.mkdir(parents=True, exist_ok=True)
    vers = versions()
    chosen = [e for e in entries() if not opts.names or e.name in opts.names]
    for e in chosen:
        t = export_one(e, vers)
        print(f"{e.name:<22} {e.kind:<22} nodes={t['onnx']['main_graph_nodes']:<5} "
              f"functions={t['onnx']['functions']:<3} bytes={t['onnx']['bytes']}", flush=True)
    total = sum(p.stat().st_size for p in ZOO.glob("*.onnx"))
    print(f"total {total} bytes in {len(list(ZOO.glob('*.onnx')))} files")
    assert total <= MAX_TOTAL, total
    return 0


if __name__ == "__main__":
    sys.exit(main())
