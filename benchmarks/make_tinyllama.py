"""A real-width Llama export for ``bench_modules.py --model``: TinyLlama-1.1B's shape (22 layers, hidden 2048,
intermediate 5632, 32 heads, 4 KV heads, vocab 32000), random weights, exported by ``torch.onnx.export(...,
dynamo=True)`` with the weights as external data. Run by hand with a torch environment (never in tests; the model
is never committed):

    ZOO_VENV/bin/python benchmarks/make_tinyllama.py --out /tmp/tinyllama [--layers 22] [--limit-gib 8]

fp32 weights take ~4.4 GB. The process watches its own resident memory (``/proc/self/status``) and stops with one
line when it passes ``--limit-gib``, so that a machine shared with other work is never pushed into swap or the OOM
killer; a narrower shape (``--hidden``, ``--intermediate``) is then the widest that fits, and says so in its name.
The peak is printed with the file's size.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
import sys
import threading
import time
import warnings
from pathlib import Path

TINYLLAMA = dict(hidden=2048, intermediate=5632, heads=32, kv_heads=4, vocab=32000)


class Watchdog:
    """The process's peak resident memory, and a hard stop above a limit (checked every 0.2 s)."""

    def __init__(self, limit_gib: float) -> None:
        self.limit = int(limit_gib * (1 << 30))
        self.peak = 0
        self.step = "start"
        threading.Thread(target=self._watch, daemon=True).start()

    @staticmethod
    def rss() -> int:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0

    def _watch(self) -> None:
        while True:
            now = self.rss()
            self.peak = max(self.peak, now)
            if now > self.limit:
                print(f"stopped: resident memory {now / (1 << 30):.1f} GiB passed the limit of "
                      f"{self.limit / (1 << 30):.1f} GiB while {self.step}", file=sys.stderr, flush=True)
                os._exit(3)
            time.sleep(0.2)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="a folder; the model and its weights file are written there")
    ap.add_argument("--layers", type=int, default=22)
    for name, value in TINYLLAMA.items():
        ap.add_argument(f"--{name.replace('_', '-')}", type=int, default=value)
    ap.add_argument("--seq", type=int, default=16, help="sequence length of the example input")
    ap.add_argument("--limit-gib", type=float, default=8.0)
    args = ap.parse_args(argv)
    dog = Watchdog(args.limit_gib)
    import torch
    import transformers

    torch.manual_seed(0)
    torch.set_num_threads(2)
    dog.step = "building the model"
    config = transformers.LlamaConfig(
        vocab_size=args.vocab, hidden_size=args.hidden, intermediate_size=args.intermediate,
        num_hidden_layers=args.layers, num_attention_heads=args.heads, num_key_value_heads=args.kv_heads,
        max_position_embeddings=2048, tie_word_embeddings=False, use_cache=False)
    t = time.perf_counter()
    with torch.no_grad():
        model = transformers.LlamaForCausalLM(config).eval()
    params = sum(p.numel() for p in model.parameters())
    print(f"built {params / 1e9:.3f}B parameters in {time.perf_counter() - t:.0f} s, "
          f"resident {dog.rss() / (1 << 30):.1f} GiB", flush=True)
    ids = torch.randint(0, args.vocab, (1, args.seq), generator=torch.Generator().manual_seed(0))
    dog.step = "exporting"
    t = time.perf_counter()
    logging.getLogger("torch.onnx._internal.exporter._registration").setLevel(logging.ERROR)
    with torch.no_grad(), warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        program = torch.onnx.export(model, (ids,), kwargs={"use_cache": False}, dynamo=True, external_data=True,
                                    verbose=False)
    assert program is not None
    print(f"exported in {time.perf_counter() - t:.0f} s, resident {dog.rss() / (1 << 30):.1f} GiB", flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    shape = "" if (args.hidden, args.intermediate) == (TINYLLAMA["hidden"], TINYLLAMA["intermediate"]) else \
        f"_h{args.hidden}_i{args.intermediate}"
    path = out / f"tinyllama_{args.layers}l{shape}.onnx"
    dog.step = "saving"
    t = time.perf_counter()
    program.save(str(path), external_data=True)
    weights = sum(p.stat().st_size for p in out.iterdir() if p.name.startswith(path.name) and p != path)
    print(f"saved {path} ({path.stat().st_size / 1e6:.1f} MB, weights {weights / 1e9:.2f} GB external) in "
          f"{time.perf_counter() - t:.0f} s; peak resident {dog.peak / (1 << 30):.1f} GiB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
