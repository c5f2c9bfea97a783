"""The filter box above the tabs filters the Modules tree too: a module whose path or class contains the text is
listed with its submodules and the modules above it; cleared, the tree is whole again. It filtered the Functions tree
and the Review list, and the Modules tab listed every module under a box that said otherwise. GPT-2 from the zoo;
the truth is the module paths torch wrote in the calls' name_scopes metadata."""

from __future__ import annotations

import ast
import shutil

import onnx
import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QModelIndex

from inspector.core.model.module_tree import ModuleNode
from inspector.gui.module_model import OPENED_AT_MOST, module_matches, object_of
from tests.conftest import ZOO, open_copy


def _shown(view, parent=None) -> list[str]:
    """The paths of the rows the view shows (expanded ones' children included), depth first."""
    parent = parent if parent is not None else QModelIndex()
    model, out = view.model(), []
    for r in range(model.rowCount(parent)):
        index = model.index(r, 0, parent)
        out.append(object_of(index).path)
        if view.isExpanded(index):
            out += _shown(view, index)
    return out


def _chains(path) -> list[list[str]]:
    """Each node's module chain as torch wrote it (name_scopes: the module paths from the root down, then the FX
    node's name, which is left out)."""
    model = onnx.load(str(path), load_external_data=False)
    return [ast.literal_eval(p.value)[:-1] for n in model.graph.node for p in n.metadata_props
            if p.key == "pkg.torch.onnx.name_scopes"]


def _kept(chains: list[list[str]], text: str) -> list[str]:
    """The modules a filter keeps, by the truth: every module of a chain that has one whose path holds ``text`` (the
    modules above it and under it)."""
    return sorted({m for chain in chains if any(text in m for m in chain) for m in chain})


def _modules_filtered(qtbot, window) -> None:
    """Wait for the Modules tree's filter, worked out off the GUI thread."""
    qtbot.waitUntil(lambda: not window.left._module_jobs, timeout=10000)


def test_a_module_path_filters_the_modules_tree_and_clearing_it_shows_all_again(qtbot, window, tmp_path):
    model = tmp_path / "gpt2.onnx"
    shutil.copy(ZOO / "gpt2.onnx", model)
    with qtbot.waitSignal(window.reviews_listed, timeout=60000):
        window.open_path(model)
    view = window.module_view
    before = _shown(view)
    assert before == ["", "transformer", "lm_head"]  # (as opened: the model's row expanded)
    chains = _chains(model)
    window.filter_box.setFocus()
    with qtbot.waitSignal(window.filter_box.changed, timeout=10000):
        qtbot.keyClicks(window.filter_box, "H.1.MLP")
    # typed on the Functions tab: the Modules tree is filtered when its tab is shown, not at each filter
    assert window.module_view.model().kept is None
    window.trees.setCurrentWidget(view)
    _modules_filtered(qtbot, window)
    # every module whose path holds the text, its submodules, the modules above it: shown, expanded, nothing else
    assert sorted(_shown(view)) == _kept(chains, "h.1.mlp") == [
        "", "transformer", "transformer.h.1", "transformer.h.1.mlp", "transformer.h.1.mlp.act",
        "transformer.h.1.mlp.c_fc", "transformer.h.1.mlp.c_proj"]
    # a class name finds its modules too (the tree's Class column): GPT-2's two GELU activations
    window.filter_box.set_now("newgelu")
    _modules_filtered(qtbot, window)
    assert [p for p in _shown(view) if p.endswith(".act")] == ["transformer.h.0.mlp.act", "transformer.h.1.mlp.act"]
    # no module matches: no row, and the tree says why
    window.filter_box.set_now("h.7.attn")
    _modules_filtered(qtbot, window)
    assert _shown(view) == [] and "No module's path or class matches “h.7.attn”" in window.left._modules_hint()
    with qtbot.waitSignal(window.filter_box.changed, timeout=10000):
        window.filter_box.clear()
    assert _shown(view) == before


def test_the_filtered_modules_tree_expands_its_way_to_the_first_matches_only(qtbot, window, tmp_path):
    # a filter that keeps most of a large tree expands down to its first matches (``shown_matches``, 100: expanding
    # all of them held the GUI thread 0.25 s at 100k nodes); the others are kept, collapsed. Llama's 15 Linear modules,
    # 3 of them shown
    model = tmp_path / "llama.onnx"
    shutil.copy(ZOO / "llama_gqa.onnx", model)
    with qtbot.waitSignal(window.reviews_listed, timeout=60000):
        window.open_path(model)
    root = window.session.index.provenance.module_root
    linear = {m.path for m in root.subtree() if m.class_name.endswith(".Linear")}
    assert len(linear) == 15
    kept, opened = module_matches(root, "linear", shown=3)
    # the modules above the first three (q, k, v of the first layer's attention), each after its parent, once
    assert [(a.path, m.path) for a, m in opened] == [
        ("", "model"), ("model", "model.layers.0"), ("model.layers.0", "model.layers.0.self_attn")]
    assert {id(m) for m in root.subtree() if m.path in linear} <= kept
    window.left.shown_matches = 3
    window.trees.setCurrentWidget(window.module_view)
    window.filter_box.set_now("linear")
    _modules_filtered(qtbot, window)
    shown = _shown(window.module_view)
    # down to the first three: their module (and its fourth Linear) shown, and the head (the model's row is open),
    # nothing of the other layers
    assert [p for p in shown if p in linear] == ["model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.k_proj",
                                                 "model.layers.0.self_attn.v_proj", "model.layers.0.self_attn.o_proj",
                                                 "lm_head"]
    window.module_view.expandAll()  # the rest are kept, and a click away
    assert sorted(p for p in _shown(window.module_view) if p in linear) == sorted(linear)


def test_a_deep_hostile_module_tree_is_filtered_in_bounded_work():
    # module paths nested 3,000 deep (a hostile model's name_scopes; deeper ones need quadratically more bytes of
    # paths in the file): matching is iterative, and what the tree expands for its first matches stays within
    # OPENED_AT_MOST, with every module above a match kept
    root = node = ModuleNode("", "Root")
    for k in range(3_000):
        child = ModuleNode(f"{node.path}.m{k}".lstrip("."), "Hit" if k in (2, 3) else "Deep")
        node.children[f"m{k}"] = child
        node = child
    node.children["end"] = ModuleNode(node.path + ".end", "Target")
    kept, opened = module_matches(root, "target", budget=OPENED_AT_MOST)
    assert len(kept) == 3_002 and opened == []  # (its chain is past the budget: nothing expanded, all kept)
    kept, opened = module_matches(root, "hit", budget=OPENED_AT_MOST)  # (by class: m2 and m3, and all under them)
    assert len(kept) == 3_002 and [(a.name, m.name) for a, m in opened] == [("", "m0"), ("m0", "m1"), ("m1", "m2")]


def _labels(view, parent=None) -> list[tuple[str, str]]:
    """(the row's text, its module's path) of every row the view shows, depth first."""
    parent = parent if parent is not None else QModelIndex()
    model, out = view.model(), []
    for r in range(model.rowCount(parent)):
        index = model.index(r, 0, parent)
        out.append((index.data(), object_of(index).path))
        if view.isExpanded(index):
            out += _labels(view, index)
    return out


def test_a_module_row_reads_its_path_past_its_parents(qtbot, window, tmp_path):
    # torch records no module for a ModuleList (Llama's ``model.layers``): the decoder layers sit right under
    # ``model``, and their rows read ``layers.0`` and ``layers.1``, as the graph's module boxes do; they read ``0`` and
    # ``1``, which did not say which list. Truth: the module paths torch wrote (name_scopes)
    model = open_copy(qtbot, window, tmp_path, "llama_gqa")
    chains = _chains(model)
    under = {chain[k]: chain[k - 1] for chain in chains for k in range(1, len(chain))}  # module -> the one above
    assert under["model.layers.1"] == "model" and under["model.layers.1.self_attn.q_proj"] == "model.layers.1.self_attn"
    view = window.module_view
    view.expandAll()
    rows = _labels(view)
    assert len(rows) == len({m for chain in chains for m in chain}) == 31
    for text, path in rows:
        above = under.get(path, "")
        assert text == ("(model)" if not path else path[len(above) + 1:] if above else path)
    assert [text for text, path in rows if path.count(".") == 2 and path.startswith("model.layers.")] == [
        "layers.0", "layers.1"]


def test_a_module_whose_path_does_not_continue_its_parents_reads_its_whole_path():
    # a hostile file's name_scopes may put any path under any module: such a row reads its whole path, not a cut one
    root = ModuleNode("", "Root")
    model = root.children["model"] = ModuleNode("model", "M")
    model.children["modelx.y"] = odd = ModuleNode("modelx.y", "Odd")
    model.children["model.a.b"] = fine = ModuleNode("model.a.b", "Fine")
    assert (odd.name_under(model), fine.name_under(model), model.name_under(root), root.name_under(None)) == (
        "modelx.y", "a.b", "model", "")


def test_the_modules_tree_counts_nodes_with_thousands_separators(qtbot):
    # as the Details tab and the graph's module boxes count them ("9,992 nodes"); the tree read 9992
    from inspector.gui.module_model import ModuleModel

    root = ModuleNode("", "Root")
    root.children["model"] = model = ModuleNode("model", "M", node_count=9_991)
    root.node_count = 1
    tree = ModuleModel(root)
    top = tree.index(0, 0)
    assert tree.index(0, 2).data() == "9,992" and tree.index(0, 2, top).data() == "9,991" and model.path == "model"
