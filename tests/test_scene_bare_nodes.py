"""Nodes of no aten call drawn in their ``nn.Module``: a stripped export's nodes that the template matcher did not
recognise (gpt2_dynamic's Range and Slice of its mask; a symbolic size's Shape) keep the
``namespace`` metadata that names their module, and are drawn and counted there (``ModuleNode.bare``), as the original
draws them inside its calls, not scattered over the graph's top level. Truth: the original export's own module tree
and scene."""

from __future__ import annotations

from pathlib import Path

from inspector.core.model.index import open_index
from inspector.core.model.keys import MAIN
from inspector.core.model.module_tree import ModuleNode
from inspector.render.scene import build_scene
from tests.conftest import ROOT
from tests.stripping import stripped_file

ZOO = ROOT / "tests" / "zoo"


def _modules(root: ModuleNode) -> dict[str, int]:
    return {m.path: m.total_nodes() for m in root.subtree()}


def test_a_stripped_exports_bare_nodes_are_drawn_in_their_modules(tmp_path: Path) -> None:
    original = open_index(ZOO / "gpt2_dynamic.onnx")
    stripped = open_index(stripped_file(ZOO / "gpt2_dynamic.onnx", tmp_path))
    placed = [i for m in stripped.provenance.module_root.subtree() for i in m.bare]
    # 3 by their own metadata and the optimizer's two Splits (one per attention, no metadata) by their neighbours, in
    # both exports (13 by metadata before the mask's two Ands were ``bitwise_and.Tensor``'s, whose template is exported
    # with bool operands, and 11 before its Conv1Ds' eight Gemms were ``addmm``'s, whose bias of zeros the optimizer
    # removed)
    splits = [i for m in original.provenance.module_root.subtree() for i in m.bare]
    assert len(placed) == 5 and set(splits) < set(placed) and len(splits) == 2
    assert {original.proto.graph.node[i].op_type for i in splits} == {"Split"}
    # every module holds as many nodes as the original's does (its calls', and now its bare nodes)
    want = {p: n for p, n in _modules(original.provenance.module_root).items() if p}
    assert {p: n for p, n in _modules(stripped.provenance.module_root).items() if p in want} == want
    # at the top: the original's own top-level nodes, as the original draws them (the two Shape nodes of symbolic
    # sizes, whose module is torch's placeholder for none, ``calls.EMPTY_MODULE_STACK``, were drawn there too until
    # ``sym_size.int`` had its template and they were its calls' again; 21 nodes before bare nodes were placed)
    top = {n.id for n in build_scene(stripped, MAIN).nodes if n.id.startswith("n:")}
    own = {n.id for n in build_scene(original, MAIN).nodes if n.id.startswith("n:")}
    assert top == own

