"""A diff of an export whose metadata was stripped against the export itself says first where each side's aten
calls come from: the same nodes gave dozens of aten-level changes (families named by the templates' candidates,
calls of other boundaries), and without that line nothing told why (they are now matched as the same nodes,
``tests/test_diff_recognised_sources.py``, and the line is what is left). The counts come from the files: the distinct
fx_node texts of the original's nodes, the nodes the stripped copy's templates claim."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

from inspector.core.diff.run import diff_models
from inspector.core.model.index import ModelIndex, open_index
from tests.conftest import ROOT
from tests.stripping import strip, stripped_file

ZOO = ROOT / "tests" / "zoo"
FX_NODE = "pkg.torch.onnx.fx_node"


def _fx_texts(model: onnx.ModelProto) -> int:
    return len({p.value for n in model.graph.node for p in n.metadata_props if p.key == FX_NODE})


@pytest.mark.parametrize("name", ["t5", "gpt2", "llama_gqa"])
def test_a_stripped_export_against_its_original_names_where_the_calls_come_from(name: str, tmp_path: Path) -> None:
    original = onnx.load(str(ZOO / f"{name}.onnx"), load_external_data=False)
    stripped = onnx.load(str(ZOO / f"{name}.onnx"), load_external_data=False)
    assert strip(stripped) > 0
    path = tmp_path / f"{name}_stripped.onnx"
    onnx.save(stripped, str(path))
    a, b = open_index(path), open_index(ZOO / f"{name}.onnx")
    recognised = a.provenance.recognised
    assert recognised > 0 and b.provenance.recognised == 0
    expected = f"aten calls: {recognised} recognised by body template -> {_fx_texts(original)} from fx metadata"
    found = [c for c in diff_models(a, b).changes if c.where == "fx metadata"]
    assert [(c.kind, c.section, c.detail) for c in found] == [("metadata_added", "model", expected)]
    back = [c for c in diff_models(b, a).changes if c.where == "fx metadata"]
    assert [(c.kind, c.old, c.new) for c in back] == [
        ("metadata_removed", f"{_fx_texts(original)} from fx metadata", f"{recognised} recognised by body template")]


def test_two_exports_with_their_metadata_have_no_such_line() -> None:
    d = diff_models(open_index(ZOO / "pair_scale_a.onnx"), open_index(ZOO / "pair_scale_b.onnx"))
    assert d.changes and not [c for c in d.changes if c.where == "fx metadata"]


def test_the_second_side_indexed_like_the_first_keeps_its_calls_recognised(tmp_path: Path) -> None:
    """B of a diff takes A's calls over where nodes are equal (``scan_like``): a call A's templates recognised stays
    one on B, as B's own index finds it (it lost its templates and candidates, and B's count said 0: a diff of two
    stripped exports then reported 'aten calls: 9 recognised by body template -> 9 from fx metadata')."""
    from inspector.core.model.index import build_index
    from inspector.core.model.loader import load_model

    paths = [stripped_file(ZOO / f"{name}.onnx", tmp_path) for name in ("pair_eps_a", "pair_eps_b")]
    a = open_index(paths[0])
    like, alone = build_index(load_model(paths[1]), like=a), open_index(paths[1])
    assert like.followed is a

    def calls(index: ModelIndex) -> list[tuple[object, ...]]:
        return sorted((c.target, c.node_paths, c.recognised, c.candidates) for c in index.provenance.calls)

    # 9 calls, and the 2 residual Adds (add.Tensor of two tensors)
    assert calls(like) == calls(alone) and like.provenance.recognised == alone.provenance.recognised == 11
    assert not [c for c in diff_models(a, like).changes if c.where == "fx metadata"]
