"""Representative one-op calls for ``gen_evidence.py``: for an aten overload, the base call (tensors and argument
values) and the variants that change one argument, or one input dimension, at a time.

The op is called the way a model calls it (``torch.conv_transpose2d``, ``torch._C._nn.upsample_bilinear2d``, a
Tensor method), not through ``torch.ops.aten``: called as an OpOverload, a composite op is decomposed before the
exporter sees it, and the export would hold other targets. Values come from ``RECIPES`` (per op name, where shapes
must agree), else from tables by parameter name and type; an argument with no representative value keeps its
default and is reported as not varied.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch

SHAPE = (2, 4, 6, 8)
SPATIAL = {"1d": 1, "2d": 2, "3d": 3}

# the ops of the project's issue 28 and the common nn ops, before the rest of the registry
PRIORITY = [
    "aten::conv_transpose2d.input", "aten::conv_transpose1d", "aten::conv_transpose3d.input",
    "aten::pixel_shuffle", "aten::pixel_unshuffle", "aten::repeat_interleave.self_int", "aten::group_norm",
    "aten::roll", "aten::upsample_nearest2d.vec", "aten::upsample_bilinear2d.vec", "aten::upsample_nearest2d",
    "aten::upsample_bilinear2d", "aten::einsum", "aten::conv1d", "aten::conv2d", "aten::conv3d",
    "aten::convolution", "aten::max_pool2d", "aten::avg_pool2d", "aten::adaptive_avg_pool2d",
    "aten::layer_norm", "aten::transpose.int", "aten::permute", "aten::softmax.int", "aten::log_softmax.int",
    "aten::view", "aten::reshape", "aten::expand", "aten::unsqueeze", "aten::squeeze.dim", "aten::flatten.using_ints",
    "aten::cat", "aten::stack", "aten::split.Tensor", "aten::chunk", "aten::select.int", "aten::slice.Tensor",
    "aten::flip", "aten::gelu", "aten::leaky_relu", "aten::elu", "aten::hardtanh", "aten::clamp",
    "aten::constant_pad_nd", "aten::pad", "aten::mean.dim", "aten::sum.dim_IntList", "aten::amax", "aten::argmax",
    "aten::topk", "aten::cumsum", "aten::tril", "aten::triu", "aten::scaled_dot_product_attention",
    "aten::_to_copy", "aten::div.Tensor_mode", "aten::mul.Tensor", "aten::add.Tensor", "aten::masked_fill.Scalar",
    "aten::index_select", "aten::gather", "aten::full", "aten::arange.start_step", "aten::embedding",
]


def _n(k: int) -> Callable[[int], list[int]]:
    return lambda n: [k] * n


# per parameter name: the values to try (base first); a callable takes the number of spatial axes
INTS: dict[str, Any] = {
    "dim": [1, -1, 2], "dim0": [0, 1], "dim1": [2, 3], "start_dim": [1, 0], "end_dim": [2, -1], "diagonal": [1, -1],
    "dim2": [1],  # (diagonal's second dimension: another than dim1's, or the call fails)
    "k": [2, 3], "num_groups": [2, 4], "upscale_factor": [2, 3], "downscale_factor": [2, 3], "repeats": [2, 3],
    "chunks": [2, 3], "split_size": [2, 3], "index": [0, 1], "start": [0, 1], "end": [3, 4], "step": [1, 2],
    "decimals": [1, 2], "reduction": [1, 2], "groups": [1], "length": [2, 3], "sections": [2, 3],
    "kernel_size": lambda n: ([2] * n, [3] * n), "stride": lambda n: ([2] * n, [1] + [2] * (n - 1)),
    "padding": lambda n: ([1] * n, [0] * n), "dilation": lambda n: ([1] * n, [2] * n),
    "output_padding": lambda n: ([0] * n, [1] * n), "output_size": lambda n: ([2] * n, [3] * n),
    "shifts": [[1], [2], [-1]], "dims": [[1], [2]], "normalized_shape": [[8], [6, 8]],
    "size": [[8, 48], [2, 192], [-1, 48]], "shape": [[8, 48], [2, 192], [-1, 48]], "pad": [[1, 1], [1, 2, 0, 1]],
    "split_sizes": [[1, 3], [2, 2]], "padding_idx": [-1, 1],
}
FLOATS: dict[str, list[Any]] = {
    "eps": [1e-5, 1e-3], "momentum": [0.1, 0.2], "negative_slope": [0.1, 0.2], "alpha": [1.5, 2.5],
    "beta": [1.5, 2.5], "threshold": [0.5, 0.25], "lambd": [0.5, 0.25], "min_val": [-0.5, -0.25],
    "max_val": [0.5, 0.75], "scale": [0.5, 0.25], "value": [0.5, 2.0], "p": [0.5, 0.25], "margin": [0.5, 1.0],
    "scale_factor": [2.0, 3.0], "delta": [1.0, 2.0], "min": [-0.5, -0.25], "max": [0.5, 0.75],
    "other": [2.0, 3.0], "exponent": [2.0, 3.0], "fill_value": [2.0, 3.0], "dropout_p": [0.0],
    "input_scale": [1.5, 2.5], "correction": [0, 1], "label_smoothing": [0.0, 0.1],
    "scale_factors": [[2.0, 2.0], [3.0, 3.0]], "scales_h": [2.0, 3.0], "scales_w": [2.0, 3.0],
}
SCALARS: dict[str, list[Any]] = {"alpha": [2, 3], "start": [0, 1], "end": [8, 10], "step": [1, 2]}
STRINGS: dict[str, list[str]] = {
    "approximate": ["none", "tanh"], "reduce": ["sum", "prod", "amax", "amin", "mean"],
    "rounding_mode": ["trunc", "floor"], "mode": ["constant", "reflect", "replicate"], "side": ["left", "right"],
    "interpolation": ["linear", "lower", "higher", "midpoint", "nearest"],
}
DTYPES = [torch.float64, torch.float16, torch.int32]
NUMBER_TYPES = ("Scalar", "number", "float")  # parameters that torchlib may compare with their default
ENUMS = ("layout", "memory_format", "device", "pin_memory", "generator", "non_blocking")

_NORM_SHAPES = {"input": SHAPE, "weight": (4,), "bias": (4,), "running_mean": (4,), "running_var": (4,)}

# per op name: tensor shapes (or ("long", shape, high) / ("bool", shape)) and argument values where the tables do not
# fit; "values" overrides the tables for this op, "fixed" pins a value that is not varied, "together" varies an
# argument with the tensor shapes it needs (value, {tensor: shape})
RECIPES: dict[str, dict[str, Any]] = {
    "conv_transpose": {"shapes": {"input": (1, 4, 5, 5, 5), "weight": (4, 2, 3, 3, 3)},
                       "values": {"stride": lambda n: ([2] * n, [1] + [2] * (n - 1)),
                                  "padding": lambda n: ([1] * n, [0] * n)}},
    # with a bias too: a Conv of three operands is conv2d's as much as convolution's (mixer's patch embedding).
    # ``groups`` takes its weight's shape with it (out, in / groups, kernel...): a depthwise convolution (MobileNet's,
    # ConvNeXt's: groups = channels) had no template, every one held group=1
    "conv": {"shapes": {"input": (1, 4, 8, 8, 8), "weight": (4, 4, 3, 3, 3)}, "with": [{"bias": (4,)}],
             "together": {"groups": [(2, {"weight": (4, 2, 3, 3, 3)}), (4, {"weight": (4, 1, 3, 3, 3)})]}},
    "convolution": {"shapes": {"input": (1, 4, 8, 8), "weight": (4, 4, 3, 3), "bias": (4,)},
                    "values": {"stride": [[1, 1], [2, 2]], "padding": [[1, 1], [0, 0]], "dilation": [[1, 1], [2, 2]],
                               "transposed": [False], "output_padding": [[0, 0]], "groups": [1]},
                    "together": {"groups": [(2, {"weight": (4, 2, 3, 3)}), (4, {"weight": (4, 1, 3, 3)})]}},
    "pixel_shuffle": {"shapes": {"self": (1, 36, 4, 4)}},
    # a batch norm the optimizer fuses into the convolution before it (ResNet's, MobileNet's): one Conv, whose metadata
    # names the batch norm and whose output FX names ``getitem`` (the batch norm's first result). The fusion needs
    # the convolution's weight and the batch norm's tensors as a model holds them (parameters and buffers), so these
    # are exports of modules (``fused_modules``), the convolution varied in kernel, stride, padding, dilation and
    # groups, so that none of those is a literal of the template (``gen_evidence.py``'s ``fused`` form); once with
    # trained statistics (the fused Conv gets a bias) and once as initialised, without a conv bias (the bias the
    # fusion makes is zero and left out: the zoo's convnet, the held-out ResNet and MobileNetV2 are random-init)
    "_native_batch_norm_legit_no_training": {"shapes": _NORM_SHAPES, "exact": True, "fused_modules": [
        (f"{what}{'' if trained else '_initialised'}", lambda conv=conv, trained=trained: _conv_bn(conv, trained))
        for trained in (True, False) for what, conv in (
            ("", dict(kernel_size=3, padding=1)), ("kernel_size", dict(kernel_size=1)),
            ("stride", dict(kernel_size=3, stride=2, padding=1)),
            ("dilation", dict(kernel_size=3, dilation=2, padding=2)),
            ("groups", dict(kernel_size=3, padding=1, groups=4)))]},
    "_native_batch_norm": {"shapes": _NORM_SHAPES}, "native_batch_norm": {"shapes": _NORM_SHAPES},
    "batch_norm": {"shapes": _NORM_SHAPES},
    # without running statistics (``nn.InstanceNorm2d``'s default: one InstanceNormalization), with and without its
    # affine weight and bias: without them torchlib makes ones and zeros inside the body (``val_<n>``), which the
    # template with weight and bias bound them as (the zoo's padnet: ``weight=val_5``, torch's None)
    "instance_norm": {"shapes": _NORM_SHAPES, "with": [
        {"running_mean": None, "running_var": None, "use_input_stats": True},
        {"running_mean": None, "running_var": None, "use_input_stats": True, "weight": None, "bias": None}]},
    # a bias of zeros the optimizer removes (``RemoveOptionalBiasFromGemm``: GPT-2's ``Conv1D`` as initialised, its
    # Gemm of two operands), exported as a module holds it, the weight's width varied so that it is masked
    "addmm": {"shapes": {"self": (4, 4), "mat1": (4, 4), "mat2": (4, 4)}, "fused_modules": [
        (what, lambda columns=columns: FusedModule(_ZeroBiasAddmm(8, columns))) for what, columns in (("", 16),
                                                                                                   ("weight", 24))]},
    "addmv": {"shapes": {"self": (4,), "mat": (4, 4), "vec": (4,)}},
    "baddbmm": {"shapes": {"self": (2, 4, 4), "batch1": (2, 4, 4), "batch2": (2, 4, 4)}},
    "addbmm": {"shapes": {"self": (4, 4), "batch1": (2, 4, 4), "batch2": (2, 4, 4)}},
    "pixel_unshuffle": {"shapes": {"self": (1, 2, 12, 12)}},
    # overloads with tensor parameters only that the default 4-D float operands cannot call: no body template was
    # exported for them, and their calls went unrecognised (the zoo's and held-out set's 15 mask ``bitwise_and``s and
    # 2 ``t``s): matrices, vectors, and masks of bools as models make them. Each for its own op only ("exact": a
    # recipe also serves the ops whose names it begins, and ``t`` would give ``transpose`` and ``tanh`` a matrix)
    "t": {"shapes": {"self": (4, 6)}, "exact": True},
    "mm": {"shapes": {"self": (4, 6), "mat2": (6, 8)}, "exact": True},
    "bmm": {"shapes": {"self": (2, 4, 6), "mat2": (2, 6, 8)}, "exact": True},
    "mv": {"shapes": {"self": (4, 6), "vec": (6,)}, "exact": True},
    "dot": {"shapes": {"self": (6,), "tensor": (6,)}, "exact": True},
    **{op: {"shapes": {"self": ("bool", SHAPE), "other": ("bool", SHAPE)}, "exact": True}
       for op in ("bitwise_and", "bitwise_or", "bitwise_xor")},
    "bitwise_not": {"shapes": {"self": ("bool", SHAPE)}, "exact": True},
    **{op: {"shapes": {"self": ("long", SHAPE, 64), "other": ("long", SHAPE, 4)}, "exact": True}
       for op in ("bitwise_left_shift", "bitwise_right_shift")},
    "prelu": {"shapes": {"weight": (4,)}, "exact": True},
    "expand_as": {"shapes": {"self": (1, 4, 1, 8)}, "exact": True},
    # overloads whose arguments the tables cannot give: sizes the operand broadcasts to (as ``expand``'s), one repeat
    # per axis, a pad of two ints per spatial axis, the one normalized axis of its weight and bias (each call failed
    # in torch with the tables' values, so no template was exported)
    "broadcast_to": {"shapes": {"self": (1, 4, 1, 8)}, "values": {"size": [[2, 4, 6, 8], [3, 4, 5, 8]]},
                     "exact": True},
    "repeat": {"values": {"repeats": [[1, 2, 1, 1], [2, 1, 3, 1]]}, "exact": True},
    **{op: {"shapes": {"self": (1, 2, 8, 8, 8)}, "values": {"padding": lambda n: ([1] * 2 * n, [2, 1] * n)}}
       for op in ("reflection_pad", "replication_pad")},
    "native_layer_norm": {"shapes": {"weight": (8,), "bias": (8,)}, "fixed": {"normalized_shape": [8]},
                          "exact": True},
    # four pads, the last two axes' (the tables' two pad one axis): a reflect or replicate ``mode`` needs an input of
    # one more axis than it pads, so with two its variants failed to export (the 4-D operand), and a stripped export's
    # ``F.pad(x, (1, 1, 1, 1), mode="reflect")``, one ``Pad`` of mode reflect, had no template
    "pad": {"values": {"pad": [[1, 1, 1, 1], [1, 2, 0, 1]]}, "exact": True},
    "group_norm": {"shapes": {"input": (2, 4, 6, 8), "weight": (4,), "bias": (4,)}},
    "layer_norm": {"fixed": {"weight": None, "bias": None}, "with": [{"weight": (8,), "bias": (8,)}, {"weight": (8,)}]},
    "roll": {"values": {"shifts": [[1], [2], [-1]], "dims": [[1], [2]]}},
    "upsample": {"shapes": {"input": (1, 2, 4, 4), "self": (1, 2, 4, 4)},
                 "values": {"output_size": [None], "scale_factors": [[2.0, 2.0], [3.0, 3.0]],
                            "align_corners": [False, True]}},
    "einsum": {"shapes": {"tensors": [(2, 3, 3), (2, 3, 3)]},
               "values": {"equation": ["bij,bjk->bik", "bij,bkj->bik", "bij,bjk->bki"]}},
    "repeat_interleave": {"fixed": {"output_size": None}},
    "permute": {"values": {"dims": [[0, 2, 1, 3], [3, 1, 2, 0]]}},
    "flip": {"values": {"dims": [[1], [2], [1, 3]]}},
    "expand": {"shapes": {"self": (1, 4, 1, 8)}, "values": {"size": [[2, 4, 6, 8], [3, 4, 5, 8]]}},
    "squeeze": {"shapes": {"self": (2, 1, 6, 1)}, "values": {"dim": [1, 3, -1]}},
    # all values distinct: the optimizer shares one initializer between equal constants, changing the body
    "slice": {"values": {"dim": [2, -1], "start": [1, 0], "end": [5, 4], "step": [3, 4]},
              "sized": {"end": ("dim", -1)}},
    # an empty stride means stride = kernel_size
    "max_pool": {"shapes": {"self": (1, 2, 8, 8, 8)},
                 "values": {"padding": lambda n: ([0] * n, [1] * n), "ceil_mode": [False, True],
                            "stride": lambda n: ([2] * n, [1] + [2] * (n - 1), [])}},
    "avg_pool": {"shapes": {"self": (1, 2, 8, 8, 8)},
                 "values": {"padding": lambda n: ([0] * n, [1] * n), "ceil_mode": [False, True],
                            "stride": lambda n: ([2] * n, [1] + [2] * (n - 1), []),
                            "count_include_pad": [True, False], "divisor_override": [None]}},
    "adaptive": {"shapes": {"self": (1, 2, 8, 8, 8), "input": (1, 2, 8, 8, 8)},
                 "values": {"output_size": lambda n: ([1] * n, [2] * n)}},
    "mean": {"values": {"dim": [[1], [-1], [1, 2]], "keepdim": [False, True]}},
    "sum": {"values": {"dim": [[1], [-1], [1, 2]], "keepdim": [False, True]}},
    "amax": {"values": {"dim": [[1], [-1], [1, 2]], "keepdim": [False, True]}},
    "amin": {"values": {"dim": [[1], [-1], [1, 2]], "keepdim": [False, True]}},
    "scaled_dot_product_attention": {"shapes": {"query": (1, 2, 4, 8), "key": (1, 2, 4, 8), "value": (1, 2, 4, 8)},
                                     "values": {"scale": [0.5, 0.25], "is_causal": [False, True],
                                                "dropout_p": [0.0], "enable_gqa": [False]},
                                     "fixed": {"attn_mask": None},
                                     "with": [{"attn_mask": (1, 2, 4, 4)}, {"attn_mask": ("bool", (1, 2, 4, 4))}],
                                     # scale=1.0: the optimizer drops the Muls by sqrt(1) (t5, which does not scale)
                                     "template_values": {"scale": [1.0]}},
    # a 2-D input lowers to Gemm, with its bias and without (a pooler's or a head's dense layer without bias)
    "linear": {"shapes": {"input": (2, 4, 8), "weight": (6, 8), "bias": (6,)},
               "with": [{"input": (4, 8)}, {"input": (4, 8), "bias": None}]},
    "matmul": {"shapes": {"self": (2, 4, 8), "other": (8, 6)}},
    "embedding": {"shapes": {"weight": (10, 4), "indices": ("long", (2, 3), 10)},
                  "values": {"padding_idx": [-1, 1]}},
    "full": {"values": {"size": [[2, 3], [3, 4]]}},
    "arange": {},
    "index_select": {"shapes": {"index": ("long", (2,), 4)}},
    # a view of a view: the optimizer makes the two Reshapes one, without ``allowzero`` and with the sizes it
    # computed (swin's attention windows), which no one-op export of view holds; exported once more that way
    # (``gen_evidence.py``'s ``fused`` form)
    "view": {"exact": True, "fused": lambda x: x.flatten()},
    # ``x[rows, cols]`` with index tensors that broadcast, as transformers builds its attention masks (a (batch,
    # seq) mask indexed by (batch, 1, 1, 1) and (1, 1, seq, 1) positions, gpt2_dynamic's and llama_gqa's): called as
    # the aten op (``Tensor.index`` is another method), and no other op's recipe (``index_add``, ``index_put``, ...)
    "index": {"op": True, "exact": True,
              "shapes": {"self": (2, 8), "indices": [("long", (2, 1, 1, 1), 2), ("long", (1, 1, 8, 1), 8)]}},
    "masked_fill": {"shapes": {"mask": ("bool", SHAPE), "value": ()}},  # (.Tensor's value: a 0-d tensor)
    "_to_copy": {"values": {"dtype": DTYPES}},
    "topk": {"values": {"k": [2, 3], "dim": [1, -1], "largest": [True, False], "sorted": [True]}},
    "cat": {"shapes": {"tensors": [SHAPE, SHAPE]}},
    "stack": {"shapes": {"tensors": [SHAPE, SHAPE]}},
}


def _conv_bn(conv: dict[str, Any], trained: bool, channels: int = 4) -> torch.nn.Module:
    """A 2-D convolution of ``conv``'s arguments, then a batch norm, in eval mode: ``trained``, with statistics and an
    affine part away from their initial values; else as initialised, the convolution without a bias."""
    torch.manual_seed(0)
    bn = torch.nn.BatchNorm2d(channels)
    if trained:
        for t in (bn.running_mean, bn.bias):
            t.data.uniform_(-1.0, 1.0)
        for t in (bn.running_var, bn.weight):
            t.data.uniform_(0.5, 2.0)
    layer = torch.nn.Conv2d(channels, channels, **conv, bias=trained)
    return FusedModule(torch.nn.Sequential(layer, bn).eval())


class _ZeroBiasAddmm(torch.nn.Module):
    """``addmm`` of a weight and a bias of zeros, as a layer holds them (``Conv1D``): its input flattened to rows."""

    def __init__(self, rows: int, columns: int) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.weight = torch.nn.Parameter(torch.randn(rows, columns))
        self.bias = torch.nn.Parameter(torch.zeros(columns))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.addmm(self.bias, x.reshape(-1, self.weight.shape[0]), self.weight)


class FusedModule(torch.nn.Module):
    """A module that takes its input as ``OneOp`` takes its tensors (``forward(*tensors)``: the export's input is
    named ``tensors_0``, as ``gen_templates.py`` reads it)."""

    def __init__(self, inner: torch.nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, *tensors: torch.Tensor) -> Any:
        return self.inner(tensors[0])


FUSED_INPUT = (1, 4, 8, 8)  # the input of the ``fused_modules`` exports


def op_of(target: str) -> str:
    """The op name of an overload (``aten::view.dtype`` -> ``view``): what ``RECIPES`` are keyed by."""
    return target.split("::", 1)[1].split(".", 1)[0]


def recipe(name: str) -> dict[str, Any]:
    """The recipe of an op name: its own, else the longest recipe name it starts with (``conv_transpose2d``)."""
    if name in RECIPES:
        return RECIPES[name]
    best = max((k for k in RECIPES if name.startswith(k) and not RECIPES[k].get("exact")), key=len, default=None)
    return RECIPES[best] if best is not None else {}


@dataclass(frozen=True)
class Param:
    name: str
    type: str  # torch's type text: "Tensor", "Optional[Tensor]", "List[int]", "int", ...
    default: Any
    has_default: bool
    kwarg_only: bool

    @property
    def base_type(self) -> str:
        t = self.type
        return t[len("Optional["):-1] if t.startswith("Optional[") else t

    @property
    def is_tensor(self) -> bool:
        return "Tensor" in self.base_type


@dataclass
class Call:
    """One call: the callable, the parameters in schema order with their values (tensors as ``Tensor`` objects)."""

    fn: Callable[..., Any]
    kind: str  # "function" (torch.X / torch._C._nn.X), "method" (Tensor.X), "op" (torch.ops.aten)
    params: list[Param]
    values: dict[str, Any]
    # an op applied to the first tensor before the call, whose body the optimizer fuses with the call's
    # (``RECIPES[op]["fused"]``: a view of a view is one Reshape, without ``allowzero``)
    before: Callable[[torch.Tensor], torch.Tensor] | None = None
    # arguments passed as a size of the first tensor plus a number (``RECIPES[op]["sized"]``: parameter -> (the
    # parameter holding the dimension, the number)), symbolic in an export with dynamic shapes: ``x[..., :n - 1]``
    # with ``n`` a length, whose end torchlib reshapes from the scalar the size arithmetic made, where a number is a
    # constant (gpt2_dynamic's and Qwen2's slices to a cache position)
    sized: dict[str, tuple[str, int]] | None = None

    @property
    def tensors(self) -> list[torch.Tensor]:
        out: list[torch.Tensor] = []
        for p in self.params:
            v = self.values.get(p.name)
            if isinstance(v, torch.Tensor):
                out.append(v)
            elif isinstance(v, list) and v and all(isinstance(x, torch.Tensor) for x in v):
                out.extend(v)
        return out

    @property
    def tensor_params(self) -> list[str]:
        """The parameter of each of ``tensors``, in their order (the export's graph inputs ``tensors_0``, ...): what
        the body template catalogue names each outside tensor by."""
        out: list[str] = []
        for p in self.params:
            v = self.values.get(p.name)
            if isinstance(v, torch.Tensor):
                out.append(p.name)
            elif isinstance(v, list) and v and all(isinstance(x, torch.Tensor) for x in v):
                out.extend([p.name] * len(v))
        return out

    def invoke(self, tensors: Sequence[torch.Tensor]) -> Any:
        if self.before is not None and tensors:
            tensors = [self.before(tensors[0]), *tensors[1:]]
        it = iter(tensors)
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for p in self.params:
            v = self.values.get(p.name, p.default)
            if self.sized and p.name in self.sized and tensors:
                dim, plus = self.sized[p.name]
                v = tensors[0].shape[self.values[dim]] + plus
            if isinstance(v, torch.Tensor):
                v = next(it)
            elif isinstance(v, list) and v and all(isinstance(x, torch.Tensor) for x in v):
                v = [next(it) for _ in v]
            if p.kwarg_only:
                if p.name in self.values:
                    kwargs[p.name] = v
            else:
                args.append((p.name in self.values, v))
        while args and not args[-1][0]:  # trailing defaults are left out (einsum takes no ``path=None``)
            args.pop()
        args = [v for _given, v in args]
        if self.kind == "method":
            return getattr(args[0], self.fn.__name__)(*args[1:], **kwargs)
        return self.fn(*args, **kwargs)


class OneOp(torch.nn.Module):
    def __init__(self, call: Call) -> None:
        super().__init__()
        self.call = call

    def forward(self, *tensors: torch.Tensor) -> Any:
        return self.call.invoke(tensors)


@dataclass
class Plan:
    base: Call
    variants: list[tuple[str, Call]] = field(default_factory=list)
    parameters: list[str] = field(default_factory=list)  # the non-tensor parameters
    not_varied: dict[str, str] = field(default_factory=dict)  # parameter -> why


def schema_params(target: str) -> tuple[Any, list[Param]] | None:
    name, _, overload = target.split("::", 1)[1].partition(".")
    packet = getattr(torch.ops.aten, name, None)
    op = getattr(packet, overload or "default", None) if packet is not None else None
    if op is None:
        return None
    params = [Param(a.name, str(a.type), a.default_value if a.has_default_value() else None, a.has_default_value(),
                    a.kwarg_only) for a in op._schema.arguments]
    return op, params


def resolve(name: str, op: Any) -> tuple[Callable[..., Any], str]:
    for ns in (torch, torch._C._nn, torch._C._linalg, torch._C._special, torch._C._fft):
        fn = getattr(ns, name, None)
        if callable(fn):
            return fn, "function"
    if hasattr(torch.Tensor, name):
        return getattr(torch.Tensor, name), "method"
    return op, "op"


def _tensor(spec: Any) -> torch.Tensor:
    gen = torch.Generator().manual_seed(0)
    if isinstance(spec, tuple) and spec and spec[0] == "long":
        return torch.randint(0, spec[2], spec[1], generator=gen)
    if isinstance(spec, tuple) and spec and spec[0] == "bool":
        return torch.randn(spec[1], generator=gen) > 0
    return torch.randn(tuple(spec), generator=gen)


def _shape_for(name: str, p: Param, rec: dict[str, Any], spatial: int | None) -> Any:
    shapes = rec.get("shapes", {})
    if p.name in shapes:
        spec = shapes[p.name]
        if isinstance(spec, tuple) and spec and isinstance(spec[0], int) and spatial is not None \
                and len(spec) > 2 + spatial:
            spec = spec[: 2 + spatial]
        return spec
    if p.name in ("index", "indices"):
        return ("long", SHAPE, 2)
    if p.name in ("mask", "condition"):
        return ("bool", SHAPE)
    if p.base_type.startswith("List["):
        return [SHAPE, SHAPE]
    if spatial is not None:
        return (2, 4, 6, 8, 10)[: 2 + spatial]
    return SHAPE


def _values_for(op: str, p: Param, rec: dict[str, Any], spatial: int) -> list[Any] | None:
    table = rec.get("values", {})
    t = p.base_type
    if p.name in table:
        got = table[p.name]
    elif p.name == "dtype":  # TorchScript types ScalarType as int
        return DTYPES
    elif p.name in ENUMS:  # layout, memory_format (typed int too), device, pin_memory: kept at their default
        return None
    elif t == "bool":
        base = p.default if p.has_default and p.default is not None else False
        return [base, not base]
    elif t == "ScalarType":
        return DTYPES
    elif t == "str":
        got = STRINGS.get(p.name)
    elif t in ("float", "List[float]"):
        got = FLOATS.get(p.name) or ([0.5, 0.25] if t == "float" else None)
    elif t in ("number", "Scalar"):
        got = SCALARS.get(p.name) or FLOATS.get(p.name) or [2.0, 3.0]
    elif t in ("int", "SymInt", "List[int]", "List[SymInt]"):
        got = INTS.get(p.name) or ([2, 3] if t in ("int", "SymInt") else None)
    else:
        return None
    if callable(got):
        got = list(got(spatial))
    return list(got) if got else None


def takes_number_other(target: str) -> bool:
    """``.Tensor`` overloads whose ``other`` a model may pass as a Python number (``mul(x, 0.35)``)."""
    found = schema_params(target)
    overload = target.split("::", 1)[1].partition(".")[2]
    return found is not None and overload == "Tensor" and any(p.name == "other" and p.type == "Tensor"
                                                              for p in found[1])


def plan(target: str, number_other: bool = False, templates: bool = False) -> Plan | str:
    """The base call and its variants, or why there are none (``"no_parameters: ..."``, ``"skipped: ..."``).
    ``templates``: for the body template catalogue (``gen_templates.py``), an overload with tensor parameters only
    is exported too, optional tensors get a variant without them (or with them, ``RECIPES[op]["with"]``), and
    optional arguments one at their default."""
    found = schema_params(target)
    if found is None:
        return "skipped: no such overload in torch"
    op, params = found
    name = op_of(target)
    if name.endswith("_") or any(p.name == "out" for p in params) or target.endswith((".out", "_out")):
        return "skipped: in-place or out= overload"
    # a Python number passed for a Tensor parameter (``mul(x, 0.35)``, FX ``mul.Tensor(%x, 0.35)``) is baked in too
    if number_other:
        params = [replace(p, type="Scalar") if p.name == "other" else p for p in params]
    non_tensor = [p for p in params if not p.is_tensor]
    if not non_tensor and not templates:
        return "no_parameters: only tensor parameters"
    rec = recipe(name)
    spatial = next((n for suffix, n in SPATIAL.items() if suffix in name), None)
    fn, kind = (op, "op") if rec.get("op") else resolve(name, op)
    values: dict[str, Any] = {}
    choices: dict[str, list[Any]] = {}
    not_varied: dict[str, str] = {}
    fixed = rec.get("fixed", {})
    for p in params:
        if p.name in fixed:
            values[p.name] = fixed[p.name]
            if not p.is_tensor:
                not_varied[p.name] = "fixed by the recipe"
            continue
        if p.is_tensor:
            if p.type.startswith("Optional[") and p.has_default and p.name not in rec.get("shapes", {}):
                continue  # left at its default (None)
            spec = _shape_for(name, p, rec, spatial)
            values[p.name] = [_tensor(s) for s in spec] if isinstance(spec, list) else _tensor(spec)
            continue
        options = _values_for(name, p, rec, spatial or 2)
        if options is None:
            if not p.has_default:
                return f"skipped: no representative value for {p.name} ({p.type})"
            not_varied[p.name] = "no representative value" if p.default is None else "kept at its default"
            continue
        values[p.name] = options[0]
        if len(options) > 1:
            choices[p.name] = options
        else:
            not_varied[p.name] = "one representative value only"
    base = Call(fn, kind, params, values)
    out = Plan(base, [], [p.name for p in non_tensor], not_varied)
    for pname, options in choices.items():
        for v in options[1:]:
            out.variants.append((pname, Call(fn, kind, params, {**values, pname: v})))
    for pname, paired in rec.get("together", {}).items():  # an argument varied with the shapes it needs
        if pname in values:
            out.not_varied.pop(pname, None)
            out.variants += [(pname, Call(fn, kind, params, {**values, pname: v, **{
                q: _tensor(spec[: len(values[q].shape)]) for q, spec in shapes.items()}})) for v, shapes in paired]
    if templates:
        for p in params:  # these variants ("#...") change the body's structure; evidence learning ignores them
            if p.is_tensor and p.type.startswith("Optional[") and values.get(p.name) is not None:
                out.variants.append((f"#without_{p.name}", Call(fn, kind, params, {**values, p.name: None})))
        for p in params:  # an optional argument at its default (dtype=None: no Cast), and the other arguments
            # varied around it: that body is a template of its own, whose slots the other arguments move too
            if not p.is_tensor and p.has_default and p.default is None and values.get(p.name) is not None:
                out.variants.append((f"#default_{p.name}", Call(fn, kind, params, {**values, p.name: None})))
                out.variants += [(f"#default_{p.name}:{q}", Call(fn, kind, params, {**values, p.name: None, q: v}))
                                 for q, options in choices.items() if q != p.name for v in options[1:]]
        for p in params:  # a number at its default (alpha=1): torchlib's trace_only code tests the value against it
            # and leaves the Mul out (``add.Tensor`` of two tensors is one Add), so that body is a template of its own
            if p.base_type in NUMBER_TYPES and p.has_default and p.default is not None \
                    and values.get(p.name) is not None and values[p.name] != p.default:
                out.variants.append((f"#default_{p.name}", Call(fn, kind, params, {**values, p.name: p.default})))
                out.variants += [(f"#default_{p.name}:{q}", Call(fn, kind, params, {**values, p.name: p.default, q: v}))
                                 for q, options in choices.items() if q != p.name for v in options[1:]]
        tensor_params = {p.name for p in params if p.is_tensor}
        for k, given in enumerate(rec.get("with", ())):  # optional tensors given together (weight and bias), and
            # the other arguments that make them optional (instance norm's running statistics: use_input_stats)
            out.variants.append((f"#with_{k}", Call(fn, kind, params, {**values, **{
                q: None if spec is None else _tensor(spec) if q in tensor_params else spec
                for q, spec in given.items()}})))  # None: left out
        for q, options in rec.get("template_values", {}).items():  # values whose body has a structure of its own,
            for v in options:  # alone and with each set of optional tensors (not evidence: the slot is gone)
                for given in [{}, *rec.get("with", ())]:
                    tensors = {r: None if spec is None else _tensor(spec) for r, spec in given.items()}
                    out.variants.append((f"#value_{q}", Call(fn, kind, params, {**values, q: v, **tensors})))
    # an input dimension changed: the first tensor's, and for the templates each other tensor's (a convolution's
    # kernel_shape is its weight's shape: without this, a template of a 3x3 convolution matched no other kernel)
    shaped = [p for p in params if isinstance(values.get(p.name), torch.Tensor)][: None if templates else 1]
    for p in shaped:
        t = values[p.name]
        if t.dim() >= 1 and t.dtype.is_floating_point:
            bigger = list(t.shape)
            bigger[-1] += 2
            out.variants.append(("#shape", Call(fn, kind, params, {**values, p.name: _tensor(tuple(bigger))})))
    try:  # the base must run eagerly, or the export cannot
        with torch.no_grad():
            base.invoke(base.tensors)
    except Exception as e:
        return f"not_exportable: the base call fails in torch: {type(e).__name__}: {str(e).splitlines()[0][:120]}"
    return out


def ordered(registry: list[str], zoo: list[str]) -> list[str]:
    """The targets to run, in order: the priority overloads and the zoo's first, then the registry's. A priority
    overload torchlib has no function of its own for is kept where torch has its schema: the exporter decomposes it
    (``conv_transpose2d.input`` into ``convolution``), and its evidence is learned from what that makes (a run that
    kept registered targets only lost the four rows of ``conv_transpose2d.input`` the test pairs read)."""
    first = [t for t in PRIORITY if t in registry or schema_params(t) is not None]
    first += [t for t in zoo if t in registry]
    return list(dict.fromkeys(first + registry))


# --- the committed test pairs --------------------------------------------------------------------------------------

# (file stem, target, parameter, value in B): A is the base call, B the variant that changes one argument
PAIRS = [
    ("conv_transpose2d_stride", "aten::conv_transpose2d.input", "stride", [1, 2]),
    ("pixel_shuffle_upscale", "aten::pixel_shuffle", "upscale_factor", 3),
    ("group_norm_groups", "aten::group_norm", "num_groups", 4),
    ("roll_shifts", "aten::roll", "shifts", [2]),
    ("upsample_scale", "aten::upsample_nearest2d.vec", "scale_factors", [3.0, 3.0]),
    ("repeat_interleave_repeats", "aten::repeat_interleave.self_int", "repeats", 3),
    ("einsum_equation", "aten::einsum", "equation", "bij,bkj->bik"),
    ("transpose_dim1", "aten::transpose.int", "dim1", 3),
]


class Shifted(torch.nn.Module):
    """Two weights folded into constants (``t``, ``t_1``); with ``extra``, a third one is folded first, so the same
    weights are ``t_1`` and ``t_2``: value names shift between two exports of one model."""

    def __init__(self, extra: bool) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(0)
        for k in range(3):
            self.register_buffer(f"w{k}", torch.randn(8, 8, generator=g))
        self.extra = extra

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.extra:
            x = (x @ (self.w0 * 1.5).t()).softmax(-1)
        return (x @ (self.w1 * 2).t()).softmax(-1) @ (self.w2 * 3).t()


def write_shifted(folder: Path) -> None:
    import contextlib
    import io
    import warnings

    for name, extra in (("a", False), ("b", True)):
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            program = torch.onnx.export(Shifted(extra).eval(), (torch.randn(8, 8),), dynamo=True)
        program.save(str(folder / f"shifted_names_{name}.onnx"))


def write_pairs(folder: Path, export: Callable[[Call, Path], None]) -> None:
    """Export each pair (A: the base call, B: one argument changed) to ``folder`` with a truth file."""
    folder.mkdir(parents=True, exist_ok=True)
    write_shifted(folder)
    truth: dict[str, Any] = {}
    for stem, target, param, value in PAIRS:
        p = plan(target)
        if isinstance(p, str):
            print(f"pair {stem}: {p}")
            continue
        old = p.base.values[param]
        export(p.base, folder / f"{stem}_a.onnx")
        export(replace(p.base, values={**p.base.values, param: value}), folder / f"{stem}_b.onnx")
        truth[stem] = {"target": target, "parameter": param, "a": old, "b": value}
    (folder / "pairs.json").write_text(json.dumps(truth, indent=1, sort_keys=True) + "\n", encoding="utf-8")
