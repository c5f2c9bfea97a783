"""Legible graphs on real exports: every text of a box (op, attributes, constant values, detail) stays inside the
box, no two labels overlap, no edge label lies on a box and no call's ƒ covers any text. The main graph with modules
open, and the aten calls with the most boxes, of the zoo's llama_gqa, t5_noopt and whisper, as the app draws them."""

from __future__ import annotations

import itertools

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QRectF
from PySide6.QtWidgets import QGraphicsSimpleTextItem

from inspector.core.model.index import ModelIndex, open_index
from inspector.core.model.keys import MAIN
from inspector.gui.graph_view import GraphView
from inspector.render.layout import layout_scene
from inspector.render.scene import build_scene
from tests.conftest import ROOT

ZOO = ROOT / "tests" / "zoo"


def _problems(view: GraphView) -> list[str]:
    out: list[str] = []
    texts: list[tuple[QRectF, str, str]] = []
    boxes: list[tuple[QRectF, str]] = []
    for node_id, item in view.items_by_id.items():
        box = item.mapRectToScene(item.rect())
        boxes.append((box, node_id))
        for child in item.childItems():
            if isinstance(child, QGraphicsSimpleTextItem):
                r = child.sceneBoundingRect()
                if not box.adjusted(-0.5, -0.5, 0.5, 0.5).contains(r):
                    out.append(f"{node_id}: {child.text()!r} is cut by its box")
                texts.append((r, child.text(), node_id))
    for edge in view.edges:
        for child in edge.childItems():
            if isinstance(child, QGraphicsSimpleTextItem):
                r = child.sceneBoundingRect()
                texts.append((r, child.text(), f"{edge.source}->{edge.target}"))
                out += [f"edge label {child.text()!r} lies on {node_id}" for box, node_id in boxes
                        if r.intersects(box.adjusted(1, 1, -1, -1))]
    for node_id, item in view.items_by_id.items():  # a call's ƒ covers no text, its own box's or another's
        if item.badge is not None:
            r = item.badge.sceneBoundingRect()
            out += [f"the ƒ of {node_id} covers {t!r} ({owner})" for box, t, owner in texts if r.intersects(box)]
    for (a, ta, oa), (b, tb, ob) in itertools.combinations(texts, 2):
        if oa != ob and a.adjusted(0.5, 0.5, -0.5, -0.5).intersects(b.adjusted(0.5, 0.5, -0.5, -0.5)):
            out.append(f"{ta!r} ({oa}) overlaps {tb!r} ({ob})")
    return out


def _modules_under(index: ModelIndex, prefix: str) -> frozenset[str]:
    """Box ids of every module whose path starts with ``prefix`` ("": all), with their ancestors."""
    out, stack = set(), [index.provenance.module_root]
    while stack:
        m = stack.pop()
        stack.extend(m.children.values())
        if m.path and (m.path.startswith(prefix) or prefix.startswith(m.path + ".")):
            out.add("mod:" + m.path)
    return frozenset(out)


# (model, the modules to open in its main graph: t5_noopt's encoder only, whole it takes 4 s to lay out)
CASES = [("llama_gqa", ""), ("t5_noopt", "encoder"), ("whisper", "")]


@pytest.mark.parametrize(("name", "opened"), CASES)
def test_no_label_is_cut_or_overlaps_another(qtbot, name: str, opened: str):
    index = open_index(ZOO / f"{name}.onnx")
    view = GraphView()
    qtbot.addWidget(view)
    view.resize(1366, 768)
    scenes = {c.name: build_scene(index, c) for c in index.provenance.calls}
    constants = {name: sum(1 for n in s.nodes if n.kind == "constant") for name, s in scenes.items()}
    with_constants = sorted(scenes, key=lambda c: (-constants[c], -len(scenes[c].nodes)))[:3]
    largest = sorted(scenes, key=lambda c: -len(scenes[c].nodes))[:2]
    todo = [build_scene(index, MAIN, _modules_under(index, opened), max_nodes=300),
            *(scenes[c] for c in dict.fromkeys(with_constants + largest))]
    shown = seen_constants = 0
    for scene in todo:
        view.show_layout(scene, layout_scene(scene))
        assert _problems(view) == [], scene.title
        shown += len(view.items_by_id)
        seen_constants += sum(1 for i in view.items_by_id if i.startswith("const:"))
    assert shown > 100 and seen_constants >= 3  # the check saw real drawings, constants among them
