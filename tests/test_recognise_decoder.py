"""A decoder's upsampling recognised by body template, against torch: ``tests/evidence/decoder.onnx``
(``scripts/evidence_cases.py``'s ``Decoder``: a ``ConvTranspose2d`` with its bias, then ``F.interpolate`` to a
size), stripped of its metadata. The templates had a transposed convolution of two operands only and a Resize by
scales only (the recipes gave neither a bias nor a size), so both nodes went unrecognised.
"""

from __future__ import annotations

import json
from pathlib import Path

from inspector.core.model.index import open_index
from tests.conftest import ROOT
from tests.stripping import stripped_file

EXPORT = ROOT / "tests" / "evidence" / "decoder.onnx"
TRUTH = json.loads((ROOT / "tests" / "evidence" / "decoder.truth.json").read_text(encoding="utf-8"))


def _calls(path: Path) -> dict[tuple[int, ...], object]:
    return {tuple(int(p[0]) for p in c.node_paths): c for c in open_index(path).provenance.calls}


def test_the_upsampling_calls_are_recognised_as_torch_made_them(tmp_path: Path) -> None:
    truth = _calls(EXPORT)
    recognised = _calls(stripped_file(EXPORT, tmp_path))
    assert {k: c.target for k, c in recognised.items()} == {k: c.target for k, c in truth.items()} == {
        (0,): "aten::convolution", (1,): "aten::upsample_bilinear2d.vec"}
    assert all(c.recognised for c in recognised.values())
    conv = recognised[(0,)].fx
    assert conv is not None
    assert {k: conv.kwargs[k] for k in ("stride", "padding", "dilation")} == TRUTH["up"]
    assert truth[(1,)].fx.args[1] == TRUTH["size"]  # (the size itself is no slot of the template: not read back)
