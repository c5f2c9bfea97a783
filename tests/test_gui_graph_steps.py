"""A big graph is drawn in steps (GraphView.show_layout with ``done``): the window answers between them. On the
zoo's llama_gqa main graph with every module open: the first step draws part of it, the rest comes in later turns of
the event loop, ``done`` is called once with every box and edge drawn (the same items as a drawing at once), and a
drawing replaced before its end never calls its ``done``."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from inspector.core.model.index import open_index
from inspector.core.model.keys import MAIN
from inspector.gui import graph_view
from inspector.gui.graph_view import GraphView
from inspector.render.layout import layout_scene
from inspector.render.scene import build_scene
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def drawing():
    index = open_index(ROOT / "tests" / "zoo" / "llama_gqa.onnx")
    root, stack, opened = index.provenance.module_root, [index.provenance.module_root], set()
    while stack:
        m = stack.pop()
        stack.extend(m.children.values())
        if m is not root:
            opened.add("mod:" + m.path)
    scene = build_scene(index, MAIN, frozenset(opened), max_nodes=300)
    return scene, layout_scene(scene)


def _drawn(view: GraphView) -> tuple[list[str], list[tuple[str, str]]]:
    return sorted(view.items_by_id), sorted((e.source, e.target) for e in view.edges)


def test_a_drawing_in_steps_ends_with_the_same_items(qtbot, monkeypatch, drawing):
    scene, layout = drawing
    whole = GraphView()
    qtbot.addWidget(whole)
    whole.show_layout(scene, layout)
    monkeypatch.setattr(graph_view, "DRAW_STEP", 0.0)  # one item per turn
    view = GraphView()
    qtbot.addWidget(view)
    calls: list[int] = []
    view.show_layout(scene, layout, lambda: calls.append(len(view.items_by_id)))
    assert len(view.items_by_id) == 1 and calls == []
    assert not view.viewport().updatesEnabled()  # the old picture stays until the drawing is whole
    qtbot.waitUntil(lambda: calls != [], timeout=10000)
    assert calls == [len(scene.nodes)] == [len(whole.items_by_id)]
    assert _drawn(view) == _drawn(whole) and len(whole.edges) == len(layout.edges) > 100
    assert view.viewport().updatesEnabled() and view.sceneRect() == whole.sceneRect()


def test_a_replaced_drawing_never_calls_its_done(qtbot, monkeypatch, drawing):
    scene, layout = drawing
    monkeypatch.setattr(graph_view, "DRAW_STEP", 0.0)
    view = GraphView()
    qtbot.addWidget(view)
    first: list[int] = []
    second: list[int] = []
    view.show_layout(scene, layout, lambda: first.append(1))
    qtbot.wait(5)
    view.show_layout(scene, layout, lambda: second.append(len(view.items_by_id)))
    qtbot.waitUntil(lambda: second != [], timeout=10000)
    qtbot.wait(20)
    assert first == [] and second == [len(scene.nodes)]
    assert len(view.edges) == len(layout.edges)  # the first drawing added nothing after it was replaced


def test_a_view_replaced_while_it_is_drawn_is_not_announced(qtbot, monkeypatch):
    """The graph panel: a view whose drawing (in steps) ends after another view was asked for is not announced
    with view_shown, and does not take the newer view's box to select; the newer view is announced once drawn."""
    from inspector.gui import graph_panel
    from inspector.gui.graph_panel import GraphPanel, View

    monkeypatch.setattr(graph_view, "DRAW_STEP", 0.0)  # one item per turn: the first view is drawn for a while
    index = open_index(ROOT / "tests" / "zoo" / "llama_gqa.onnx")
    panel = GraphPanel()
    qtbot.addWidget(panel)
    panel.set_index(index, show_main=False)
    call = index.provenance.calls[5]
    assert call.node_paths == [(6,)]
    slow_key = (id(index), graph_panel.scope_key(call), frozenset())
    compute = panel.cache.get_or_compute

    def slowly(key, scene, rankdir="TB"):  # the second view's layout takes longer than the first one's drawing
        if key == slow_key:
            import time

            time.sleep(1.5)
        return compute(key, scene, rankdir)

    monkeypatch.setattr(panel.cache, "get_or_compute", slowly)
    draw = panel.graph.show_layout

    def then_another(scene, layout, done=None):  # the main graph's first step is drawn: ask for the call's view
        draw(scene, layout, done)
        assert panel.graph._drawing is not None  # more steps to come
        monkeypatch.setattr(panel.graph, "show_layout", draw)
        panel.show_scope(call, focus="n:6")

    monkeypatch.setattr(panel.graph, "show_layout", then_another)
    shown: list[View] = []
    panel.view_shown.connect(shown.append)
    panel.open_view(View(MAIN))
    qtbot.waitUntil(lambda: shown != [], timeout=30000)
    qtbot.wait(100)
    assert shown == [View(call)] and panel.current_view() == View(call)
    selected = panel.graph.selected()  # the call's node (main graph node 6), as asked
    assert selected is not None and selected.id == "n:6"
