"""A diff judges what a body bakes in alike on both sides (``cut.agree_small``): a value small enough to be baked on
one side and too large on the other, read by the calls of the same FX names on both, is read on both, and its change
is the initializer's. Checked on the zoo's T5, whose attention adds ``where_2`` (a position bias the exporter folded
into a 16-element initializer, 4 heads broadcast) to the scores: the same export with the bias written out per head
(64 elements, the same sums) had read as ``add_22``'s body losing a constant. And a name alone is not the same value:
``pair_scale``'s two exports hold ``val_75`` as a shape in one and as a weight in the other.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from inspector.core.diff import diff_files, diff_models
from inspector.core.diff.units import Side
from inspector.core.model.index import open_index
from tests.conftest import ROOT
from tests.test_diff_cut import own_sides

ZOO = ROOT / "tests" / "zoo"
T5 = ZOO / "t5.onnx"


def _t5_bias_per_head(tmp_path: Path) -> Path:
    model = onnx.load(str(T5), load_external_data=False)
    t = next(t for t in model.graph.initializer if t.name == "where_2")
    bias = numpy_helper.to_array(t)
    assert bias.shape == (1, 1, 4, 4)
    t.CopyFrom(numpy_helper.from_array(np.ascontiguousarray(np.tile(bias, (1, 4, 1, 1))), "where_2"))
    out = tmp_path / "t5_per_head.onnx"
    onnx.save(model, str(out))
    return out


@pytest.mark.parametrize("order", ["ab", "ba"])
def test_a_bias_grown_past_the_bound_is_an_initializer_reshaped(tmp_path: Path, order: str):
    other = _t5_bias_per_head(tmp_path)
    a, b = (T5, other) if order == "ab" else (other, T5)
    d = diff_files(a, b)
    shapes = ["FLOAT[1, 1, 4, 4]", "FLOAT[1, 4, 4, 4]"]
    old, new = shapes if order == "ab" else shapes[::-1]
    assert [(c.kind, c.where, c.old, c.new) for c in d.changes] == [("initializer_reshaped", "where_2", old, new)]


def test_cut_on_its_own_each_side_reads_the_bias(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """As the diff cuts two exports of other layouts: each side on its own, the bias read by add_22 on both."""
    a, b = open_index(T5, modules=False), open_index(_t5_bias_per_head(tmp_path), modules=False)
    sides = own_sides(a, b)
    for side in sides:
        uid = next(k for k, u in enumerate(side.units[:side.n_calls]) if u is not None and u.label == "add_22")
        unit = side.unit(uid)
        assert "where_2" in unit.reads and "where_2" not in unit.constants
    monkeypatch.setattr(Side, "pair", classmethod(lambda cls, x, y, progress=None: own_sides(x, y)))
    assert [(c.kind, c.where) for c in diff_models(a, b).changes] == [("initializer_reshaped", "where_2")]


def test_alone_the_bias_is_baked_in_as_a_small_constant():
    """(What the agreement changes: cut alone, T5 bakes its 16-element bias into add_22.)"""
    side = Side(open_index(T5, modules=False))
    unit = side.unit(next(k for k, u in enumerate(side.units[:side.n_calls]) if u is not None and u.label == "add_22"))
    assert list(unit.constants) == ["where_2"]


def test_a_name_held_for_other_values_is_not_agreed_on():
    """pair_scale_a holds val_75 as a view's INT64[3] shape, pair_scale_b as an FLOAT[64, 32] weight: each view
    still bakes its shape, and the diff reads the two scales alone."""
    a, b = (open_index(ZOO / f"pair_scale_{s}.onnx", modules=False) for s in "ab")
    tensors = [{t.name: t for t in ix.proto.graph.initializer}["val_75"] for ix in (a, b)]
    assert [list(t.dims) for t in tensors] == [[3], [64, 32]]
    d = diff_models(a, b)
    assert [(c.kind, c.where) for c in d.changes] == [("value_changed", "scaled_dot_product_attention"),
                                                      ("value_changed", "scaled_dot_product_attention_1")]


def test_a_name_two_sdpa_calls_read_for_other_values_is_not_agreed_on():
    """Two different transformers (the fixture block and pair_heads_a) whose SDPA calls both read ``val_49``: one as
    its FLOAT[1] scale, the other as its [8, 8] mask, another operator's operand of another rank. Each keeps its
    own: the first one's body loses its scale constant, and no initializer is said to be reshaped. A's scale is the
    other's ``val_64``, read by the same Mul of the matched call; the other's mask, which A has none of, is added."""
    from tests.conftest import FIXTURES

    a, b = open_index(FIXTURES / "dynamo_block.onnx", modules=False), open_index(ZOO / "pair_heads_a.onnx",
                                                                                  modules=False)
    shapes = [list({t.name: t for t in ix.proto.graph.initializer}["val_49"].dims) for ix in (a, b)]
    assert shapes == [[1], [8, 8]]
    d = diff_models(a, b)
    masks = [(n.op_type, list(n.input).index("val_49")) for n in b.proto.graph.node if "val_49" in n.input]
    assert masks == [("Add", 1), ("Add", 1)]  # (B's mask: what its two SDPA calls add to their scores)
    assert [(c.kind, c.new["shape"] if c.new else None) for c in d.changes if c.where == "val_49"] == [
        ("initializer_added", [8, 8])]
    sdpa = [c for c in d.changes if c.kind == "body_changed" and "scaled_dot_product_attention" in c.family]
    assert sdpa and all("-3 (constant INT64[3], constant INT64[4], constant FLOAT[1])" in c.detail for c in sdpa)
