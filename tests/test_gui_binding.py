"""The Qt binding never takes references to ``None`` away (gui/binding.py): PySide6 6.12.0 on Python 3.11 lost one
on every void Qt call, and the app aborted after a few dozen drawn graphs. Counted around a real drawing: the main
graph of the zoo's llama_gqa with every module open (112 boxes), drawn ten times. And a binding that does lose them
is refused at start with one line and exit code 2, before any window opens."""

from __future__ import annotations

import ctypes
import gc
import sys

import pytest

pytest.importorskip("PySide6")

from inspector import cli
from inspector.core.model.index import open_index
from inspector.core.model.keys import MAIN
from inspector.gui import binding
from inspector.gui.graph_view import GraphView
from inspector.render.layout import layout_scene
from inspector.render.scene import build_scene
from tests.conftest import ROOT

MORTAL_NONE = pytest.mark.skipif(sys.version_info >= (3, 12), reason="None is immortal from Python 3.12 on")


def _all_modules(index) -> frozenset[str]:
    out, stack = set(), [index.provenance.module_root]
    while stack:
        m = stack.pop()
        stack.extend(m.children.values())
        if m.path:
            out.add("mod:" + m.path)
    return frozenset(out)


@MORTAL_NONE
def test_drawing_graphs_keeps_every_reference_to_none(qtbot):
    index = open_index(ROOT / "tests" / "zoo" / "llama_gqa.onnx")
    scene = build_scene(index, MAIN, _all_modules(index), max_nodes=300)
    layout = layout_scene(scene)
    view = GraphView()
    qtbot.addWidget(view)
    view.show_layout(scene, layout)
    assert len(view.items_by_id) >= 100  # a real drawing: about 2,000 void Qt calls
    gc.collect()
    before = sys.getrefcount(None)
    for _ in range(10):
        view.show_layout(scene, layout)
        qtbot.wait(1)
    gc.collect()
    # the same drawing again holds the same references: with the broken binding, about 19,000 fewer
    assert sys.getrefcount(None) - before > -100


def _leaking_call():
    # a stand-in for the broken binding: one reference to None taken away per call, given back by the test
    return lambda: ctypes.pythonapi.Py_DecRef(ctypes.py_object(None))


@MORTAL_NONE
def test_a_binding_that_loses_references_is_refused_with_one_line(monkeypatch, capsys):
    monkeypatch.setattr(binding, "_void_qt_call", _leaking_call)
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    try:
        code = cli.main([str(ROOT / "resources" / "samples" / "sample_export.onnx")])
    finally:
        for _ in range(binding.PROBE_CALLS):
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(None))
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("onnx-inspector: error: PySide6 ")
    assert "loses a reference to None on every Qt call" in err and "PySide6-Essentials<6.12" in err


def test_the_installed_binding_passes_the_check():
    assert binding.none_references_lost(binding._void_qt_call()) == 0
    binding.check_binding()
