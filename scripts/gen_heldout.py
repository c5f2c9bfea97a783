"""Export a held-out set of real models, none of them in the zoo, into a folder outside the repository: the
architectures the zoo's templates and rules were never looked at against (Mistral, Qwen2, Phi3, Gemma, GPT-NeoX,
OPT, BART, RoBERTa, DistilBERT, Swin, ConvNeXt, ResNet, MobileNetV2, CLIP), exported by the zoo's own steps
(``gen_zoo.export_one``: tiny random-init configurations under the zoo's seed, checked against torch in
onnxruntime, a ``NAME.truth.json`` from torch beside each). ``measure_recognition.py --dir DIR`` then measures the
body template matcher on them, so its figures are not only those of the files it was tuned on.

Run by hand, never by ``make test`` (it needs torch and transformers: the environment of ``make zoo``)::

    .venv-zoo/bin/python scripts/gen_heldout.py OUT_DIR [NAME ...]
    .venv/bin/python scripts/measure_recognition.py --dir OUT_DIR
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch
from gen_zoo import Entry, InputSpec, _ids, export_one, hf, versions

_CAUSAL = dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
               num_key_value_heads=2, max_position_embeddings=32, bos_token_id=0, eos_token_id=0, pad_token_id=0)
MISTRAL = dict(_CAUSAL, sliding_window=4)
QWEN2 = dict(_CAUSAL)
PHI3 = dict(_CAUSAL, original_max_position_embeddings=32)
GEMMA = dict(_CAUSAL, head_dim=8)
NEOX = dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            max_position_embeddings=32, rotary_pct=0.5, bos_token_id=0, eos_token_id=0)
OPT = dict(vocab_size=64, hidden_size=32, ffn_dim=64, num_hidden_layers=2, num_attention_heads=4,
           max_position_embeddings=32, word_embed_proj_dim=32, pad_token_id=1, bos_token_id=0, eos_token_id=2)
BART = dict(vocab_size=64, d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
            decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=32,
            pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2)
ROBERTA = dict(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
               max_position_embeddings=40, type_vocab_size=1, pad_token_id=1)
DISTILBERT = dict(vocab_size=64, dim=32, n_layers=2, n_heads=2, hidden_dim=64, max_position_embeddings=32,
                  pad_token_id=0)
SWIN = dict(image_size=32, patch_size=4, num_channels=3, embed_dim=16, depths=[1, 1], num_heads=[2, 4],
            window_size=4)
CONVNEXT = dict(num_channels=3, num_stages=2, hidden_sizes=[8, 16], depths=[1, 1], image_size=32)
RESNET = dict(num_channels=3, embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1], layer_type="basic")
MOBILENET = dict(num_channels=3, image_size=32, depth_multiplier=0.1, min_depth=4, round_nearest=4)
CLIP: dict[str, Any] = dict(
    text_config=dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                     num_attention_heads=2, max_position_embeddings=16),
    vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                       image_size=16, patch_size=4),
    projection_dim=16)


def _image(size: int = 32, name: str = "pixel_values") -> InputSpec:
    return InputSpec(name, [1, 3, size, size], "float32")


def entries() -> list[Entry]:
    """The held-out models: decoder LMs (some with dynamic shapes or without the optimizer), encoders, an
    encoder-decoder, vision backbones and a two-tower model."""
    lm = {"use_cache": False}
    dyn = {"input_ids": {0: "batch", 1: "seq"}}
    return [
        Entry("mistral", "dynamo", hf("MistralForCausalLM", "MistralConfig", MISTRAL), [_ids()], MISTRAL,
              "HF Mistral (sliding window)", True, lm),
        Entry("mistral_noopt", "dynamo-noopt", hf("MistralForCausalLM", "MistralConfig", MISTRAL), [_ids()], MISTRAL,
              "HF Mistral, dynamo optimize=False", True, lm),
        Entry("qwen2", "dynamo", hf("Qwen2ForCausalLM", "Qwen2Config", QWEN2), [_ids()], QWEN2,
              "HF Qwen2", True, lm),
        Entry("qwen2_dynamic", "dynamo", hf("Qwen2ForCausalLM", "Qwen2Config", QWEN2), [_ids(shape=(2, 8))], QWEN2,
              "HF Qwen2 with dynamic batch and sequence", True, lm, dynamic=dyn),
        Entry("phi3", "dynamo", hf("Phi3ForCausalLM", "Phi3Config", PHI3), [_ids()], PHI3, "HF Phi3", True, lm),
        Entry("gemma", "dynamo", hf("GemmaForCausalLM", "GemmaConfig", GEMMA), [_ids()], GEMMA, "HF Gemma", True, lm),
        Entry("gpt_neox", "dynamo", hf("GPTNeoXForCausalLM", "GPTNeoXConfig", NEOX), [_ids()], NEOX,
              "HF GPT-NeoX (partial rotary)", True, lm),
        Entry("opt", "dynamo", hf("OPTForCausalLM", "OPTConfig", OPT), [_ids()], OPT, "HF OPT", True, lm),
        Entry("bart", "dynamo", hf("BartForConditionalGeneration", "BartConfig", BART),
              [_ids(), _ids("decoder_input_ids", (1, 4))], BART, "HF BART encoder-decoder", True, lm),
        Entry("roberta", "dynamo", hf("RobertaModel", "RobertaConfig", ROBERTA),
              [_ids(), InputSpec("attention_mask", [1, 8], "int64", 2)], ROBERTA, "HF RoBERTa with a mask", True),
        Entry("distilbert", "dynamo", hf("DistilBertModel", "DistilBertConfig", DISTILBERT),
              [_ids(), InputSpec("attention_mask", [1, 8], "int64", 2)], DISTILBERT, "HF DistilBERT", True),
        Entry("swin", "dynamo", hf("SwinModel", "SwinConfig", SWIN, attn_implementation="eager"), [_image()], SWIN,
              "HF Swin (eager attention: its SDPA path fails to export in torch 2.13)", True),
        Entry("convnext", "dynamo", hf("ConvNextModel", "ConvNextConfig", CONVNEXT), [_image()], CONVNEXT,
              "HF ConvNeXt", True),
        Entry("resnet", "dynamo", hf("ResNetModel", "ResNetConfig", RESNET), [_image()], RESNET, "HF ResNet", True),
        Entry("mobilenet_v2", "dynamo", hf("MobileNetV2Model", "MobileNetV2Config", MOBILENET), [_image()],
              MOBILENET, "HF MobileNetV2", True),
        Entry("clip", "dynamo", hf("CLIPModel", "CLIPConfig", CLIP), [_ids(), _image(16)], CLIP,
              "HF CLIP, text and vision towers", True),
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="the folder to write the exports into (outside tests/zoo)")
    ap.add_argument("names", nargs="*", help="only these entries")
    args = ap.parse_args(argv)
    torch.use_deterministic_algorithms(True)
    args.out.mkdir(parents=True, exist_ok=True)
    vers = versions()
    failed = 0
    for e in entries():
        if args.names and e.name not in args.names:
            continue
        try:
            t = export_one(e, vers, args.out)
        except Exception as exc:  # (one architecture's export failing is reported; the others still run)
            failed += 1
            print(f"{e.name:<16} failed: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}", flush=True)
            continue
        print(f"{e.name:<16} {e.kind:<14} nodes={t['onnx']['main_graph_nodes']:<5} bytes={t['onnx']['bytes']}",
              flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
