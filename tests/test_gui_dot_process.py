"""The app lays graphs out in a helper process (gui/dot_process.py): Graphviz holds the GIL for a whole layout, and
the GUI thread would wait for it. The layouts are the ones made in-process (the CLI's and the reports'), a helper
that dies fails one layout with one line and the next layout starts a new one, and the graph panel uses it."""

from __future__ import annotations

import os
import signal
import sys

import pytest

pytest.importorskip("PySide6")

from inspector.core.model.index import open_index
from inspector.core.model.keys import MAIN
from inspector.gui import dot_process
from inspector.gui.graph_panel import GraphPanel
from inspector.render.layout import layout_scene
from inspector.render.scene import build_scene
from tests.conftest import ROOT


def _helper_pids() -> list[int]:
    pid = dot_process.helper_pid()
    return [pid] if pid is not None else []


@pytest.fixture(scope="module")
def scenes():
    index = open_index(ROOT / "tests" / "zoo" / "whisper.onnx")
    bodies = sorted((build_scene(index, c) for c in index.provenance.calls), key=lambda s: -len(s.nodes))[:3]
    return [build_scene(index, MAIN, frozenset(), max_nodes=300), *bodies]


def test_layouts_made_elsewhere_are_the_layouts_made_here(scenes):
    for scene in scenes:
        for rankdir in ("TB", "LR"):
            assert layout_scene(scene, rankdir, dot_process.run_dot_elsewhere) == layout_scene(scene, rankdir)
    assert _helper_pids() and os.getpid() not in _helper_pids()


def test_a_helper_that_died_is_started_again(scenes):
    layout_scene(scenes[0], dot=dot_process.run_dot_elsewhere)
    (pid,) = _helper_pids()
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    assert layout_scene(scenes[1], dot=dot_process.run_dot_elsewhere) == layout_scene(scenes[1])
    assert _helper_pids() and _helper_pids() != [pid]


def test_a_helper_that_dies_during_a_layout_fails_it_with_one_line(scenes, monkeypatch):
    dot_process.shut_down()
    # a helper that reads the job and exits without an answer, as Graphviz crashing in it would
    monkeypatch.setattr(dot_process, "HELPER", [sys.executable, "-c", "import sys; sys.stdin.readline()"])
    with pytest.raises(RuntimeError, match=r"^the layout process stopped \(Graphviz crashed\?\); try again$"):
        layout_scene(scenes[1], dot=dot_process.run_dot_elsewhere)
    assert _helper_pids() == []
    monkeypatch.undo()
    assert layout_scene(scenes[1], dot=dot_process.run_dot_elsewhere) == layout_scene(scenes[1])


def test_a_malformed_job_fails_with_one_line():
    from inspector.render.dot import DotJob

    bad = DotJob("TB", "0.3", (("v0", "1"),), ())  # type: ignore[arg-type]  # a node without its height
    with pytest.raises(RuntimeError, match=r"^dot: ValueError: not enough values to unpack"):
        dot_process.run_dot_elsewhere(bad, 7.0)
    assert _helper_pids()  # the helper serves the next job


def test_the_graph_panel_lays_out_in_the_helper(qtbot, scenes):
    dot_process.shut_down()
    panel = GraphPanel()
    qtbot.addWidget(panel)
    with qtbot.waitSignal(panel.view_shown, timeout=30000):
        panel.set_index(open_index(ROOT / "tests" / "zoo" / "whisper.onnx"))
    assert len(panel.graph.items_by_id) == len(panel.scene.nodes) > 3
    assert panel.cache.dot is dot_process.run_dot_elsewhere and len(_helper_pids()) == 1


def test_a_report_exported_from_the_app_is_laid_out_in_the_helper(monkeypatch):
    from inspector.gui import main_window

    jobs: list[int] = []

    def counting(job, size):
        jobs.append(len(job.nodes))
        return dot_process.run_dot_elsewhere(job, size)

    monkeypatch.setattr(main_window, "run_dot_elsewhere", counting)
    index = open_index(ROOT / "tests" / "zoo" / "whisper.onnx")
    html = main_window.render_report(index, None, "html")
    assert len(jobs) >= 5 and html.count("<svg") >= len(jobs)
