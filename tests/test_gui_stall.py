"""What keeps the GUI thread free while a large model opens: protobuf holds the GIL for a whole parse, so the app
loads with a progress checkpoint (loader.load_model(progress=worker.checkpoint)), with which core parses large files
in pieces; the pieces must give exactly the model parsed whole, and a bad file the same one-line error."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path
from typing import Any

import pytest

from inspector.core.model import loader
from inspector.core.util.errors import ModelLoadError
from inspector.core.util.progress import Progress
from tests.conftest import FIXTURES, ROOT, ZOO

MODELS = sorted((ROOT / "tests" / "zoo").glob("*.onnx")) + sorted(FIXTURES.glob("*.onnx"))
BAD = sorted((FIXTURES / "bad").glob("*.onnx"))


@pytest.fixture
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file is parsed in pieces of 4 KB (a 300 KB export in ~80 pieces)."""
    monkeypatch.setattr(loader, "PIECEWISE_BYTES", 0)
    monkeypatch.setattr(loader, "_PIECE_BYTES", 4096)


def _progress(seen: list[tuple[int, int]] | None = None) -> Progress:
    def progress(done: int, total: int) -> None:
        if seen is not None:
            seen.append((done, total))

    return progress


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.name)
def test_pieces_give_the_model_parsed_whole(path: Path, small_pieces: None) -> None:
    whole = loader.load_model(path).proto
    data = path.read_bytes()
    seen: list[tuple[int, int]] = []
    assert loader._parse_in_pieces(data, _progress(seen)) is not None  # in pieces, not by the whole-file fallback
    assert seen[-1] == (len(data), len(data)) and all(a[0] <= b[0] for a, b in itertools.pairwise(seen))
    assert loader.load_model(path, progress=_progress()).proto.SerializeToString() == whole.SerializeToString()
    assert loader.load_model(path, progress=_progress()).proto == whole


def test_progress_is_reported_between_pieces_and_may_stop_the_load(small_pieces: None) -> None:
    path = ROOT / "tests" / "zoo" / "gpt2.onnx"
    size = path.stat().st_size
    seen: list[tuple[int, int]] = []
    loader.load_model(path, progress=_progress(seen))
    assert len(seen) > size // 4096 // 2 and seen[-1] == (size, size)
    assert all(0 < done <= size and total == size for done, total in seen)

    class Stop(Exception):
        pass

    def stop_halfway(done: int, total: int) -> None:
        if done > total // 2:
            raise Stop

    with pytest.raises(Stop):  # the caller's exception, not a load error
        loader.load_model(path, progress=stop_halfway)


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.name)
def test_a_bad_file_gives_the_same_error_in_pieces(path: Path, small_pieces: None) -> None:
    with pytest.raises(ModelLoadError) as whole:
        loader.load_model(path)
    with pytest.raises(ModelLoadError) as pieces:
        loader.load_model(path, progress=_progress())
    assert str(pieces.value) == str(whole.value) and "\n" not in str(pieces.value)


def test_a_truncated_large_file_is_an_error_not_a_partial_model(tmp_path: Path, small_pieces: None) -> None:
    data = (ROOT / "tests" / "zoo" / "gpt2.onnx").read_bytes()
    for cut in (len(data) // 3, len(data) - 7):
        bad = tmp_path / f"cut_{cut}.onnx"
        bad.write_bytes(data[:cut])
        assert loader._parse_in_pieces(data[:cut], _progress()) is None
        with pytest.raises(ModelLoadError, match="not a valid ONNX protobuf"):
            loader.load_model(bad, progress=_progress())


def test_workers_hand_the_gil_to_the_gui_thread_often(qtbot: object) -> None:
    """Qt calls into Python once per row when a view lays out or paints, and each call waits for the GIL: a
    running job must hand it over within 10 us (Python's default 5 ms made the GUI thread's work wait in a convoy;
    0.2 ms still stretched a 100k-node model's open to 150 ms)."""
    from PySide6.QtCore import QThreadPool

    from inspector.gui.worker import GIL_SWITCH_S, Jobs

    results: list[int] = []
    Jobs().run(lambda: 42, results.append)
    QThreadPool.globalInstance().waitForDone(10000)
    assert sys.getswitchinterval() <= GIL_SWITCH_S == 0.00001


@pytest.mark.parametrize("name", ["llama_gqa", "gpt2", "t5", "whisper"])
def test_module_rows_count_the_nodes_torch_says_each_module_emitted(name: str, qtbot: object) -> None:
    """The Nodes column of the modules tree, with the counts worked out in one pass off the GUI thread: for each
    nn.Module of the truth file, the ONNX nodes of the aten calls made inside it (modules that emitted none have
    no row), and the nodes the optimizer made there (GPT-2's two Splits, one per attention)."""
    import json

    from inspector.core.model.index import open_index
    from inspector.gui.module_model import ModuleModel, object_of
    from inspector.render.overview import module_totals
    from tests.truth_modules import made_by_optimizer

    root = open_index(ROOT / "tests" / "zoo" / f"{name}.onnx").provenance.module_root
    model = ModuleModel(root, module_totals(root))
    shown: dict[str, str] = {}
    stack = [model.index(0, 0)]
    while stack:
        ix = stack.pop()
        node = object_of(ix)
        assert node is not None
        shown[node.path] = ix.siblingAtColumn(2).data()
        stack += [model.index(r, 0, ix) for r in range(model.rowCount(ix))]
    zoo = ROOT / "tests" / "zoo"
    truth = json.loads((zoo / f"{name}.truth.json").read_text())
    made = made_by_optimizer(zoo / f"{name}.onnx", zoo / f"{name}.truth.json")
    assert sum(made.values()) == {"gpt2": 6}.get(name, 0)  # transformer, transformer.h.N, its attn: 2 each
    for path in truth["module_paths"]:
        emitted = sum(n["onnx_nodes"] for n in truth["fx_nodes"] if n["graph"] == "" and path in n["module_stack"])
        assert shown.get(path, "0") == str(emitted + made.get(path, 0)), path
    assert len(shown) > 10


def test_a_finished_job_is_freed_without_the_garbage_collector(qtbot: Any) -> None:
    """A job's QObject must go when it reports, on the GUI thread: left in a reference cycle, it was freed by
    whichever thread's allocation set off a collection, a worker's too (a segfault while a model loaded)."""
    import gc
    import weakref

    from PySide6.QtCore import QThreadPool

    from inspector.gui.collector import gui_collects
    from inspector.gui.worker import Jobs

    results: list[int] = []
    was_enabled = gc.isenabled()  # off once jobs have run: the GUI thread's timer collects instead
    gc.disable()
    try:
        jobs = Jobs()
        job = jobs.run(lambda: 42, results.append)
        signals = weakref.ref(job.signals.qt)
        del job
        QThreadPool.globalInstance().waitForDone(10000)
        qtbot.waitUntil(lambda: results == [42], timeout=5000)
        assert not jobs and signals() is None
    finally:
        if was_enabled and not gui_collects():
            gc.enable()


def test_the_collector_runs_on_the_gui_thread_only(qtbot: Any) -> None:
    """Once jobs run, automatic collection is off (a worker could otherwise free Qt wrappers under the GUI
    thread) and the GUI thread's timer collects cycles instead."""
    import gc
    import threading
    import weakref

    from inspector.gui.worker import Jobs

    results: list[int] = []
    Jobs().run(lambda: 1, results.append)
    qtbot.waitUntil(lambda: results == [1], timeout=5000)
    assert not gc.isenabled()

    class Cycle:
        pass

    freed_on: list[str] = []
    a, b = Cycle(), Cycle()
    a.other, b.other = b, a  # type: ignore[attr-defined]
    weakref.finalize(a, lambda: freed_on.append(threading.current_thread().name))
    del a, b
    kept = [Cycle() for _ in range(3 * gc.get_threshold()[0])]  # live allocations past generation 0's threshold
    qtbot.waitUntil(lambda: bool(freed_on), timeout=5000)
    del kept
    assert freed_on == [threading.main_thread().name]


def test_a_module_s_details_count_its_nodes_without_walking_it(qtbot: Any, window: Any,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Selecting a module shows the nodes torch says it emitted (submodules included), taken from the counts the
    modules tree made off the GUI thread: walking the subtree on the GUI thread took 18 ms for the root at 100k."""
    import json

    from inspector.core.model.module_tree import ModuleNode
    from inspector.gui.module_model import object_of
    from tests.truth_modules import made_by_optimizer

    with qtbot.waitSignal(window.model_loaded, timeout=60000):
        window.open_path(ROOT / "tests" / "zoo" / "gpt2.onnx")
    truth = json.loads((ROOT / "tests" / "zoo" / "gpt2.truth.json").read_text())
    made = made_by_optimizer(ROOT / "tests" / "zoo" / "gpt2.onnx", ROOT / "tests" / "zoo" / "gpt2.truth.json")

    def walked(_node: ModuleNode) -> int:
        raise AssertionError("a module's subtree was walked on the GUI thread")

    monkeypatch.setattr(ModuleNode, "total_nodes", walked)
    model = window.module_view.model()
    stack, checked, kinds = [model.index(0, 0)], 0, set()
    while stack and checked < 12:
        ix = stack.pop()
        node = object_of(ix)
        assert node is not None
        window.module_view.setCurrentIndex(ix)
        if node.path:
            under = [n for n in truth["fx_nodes"] if n["graph"] == "" and n["onnx_nodes"]
                     and node.path in n["module_stack"]]
            own = [n for n in under if n["module"] == node.path]
            emitted = sum(n["onnx_nodes"] for n in under) + made.get(node.path, 0)  # (and the optimizer's)
            text = window.details.toPlainText()
            kinds.add(bool(node.children))
            if node.children:  # (its aten calls with its submodules', and its own: "Aten calls 0" read as none)
                assert f"\nNodes (with submodules)\n{emitted}\n" in text, node.path
                assert f"\nAten calls (with submodules)\n{len(under)}\nIts own aten calls\n{len(own)}\n" in text
            else:
                assert f"\nAten calls\n{len(own)}\nNodes\n{emitted}\n" in text and len(own) == len(under)
            checked += 1
        stack += [model.index(r, 0, ix) for r in range(model.rowCount(ix))]
    assert checked == 12 and kinds == {True, False}


def test_a_module_s_details_say_how_many_calls_they_leave_out(monkeypatch: Any):
    # the list of a module's calls stopped at 200 without a word, so a module of 300 calls looked whole; counts read
    # with thousands separators as the model's do
    from inspector.core.model.index import open_index
    from inspector.core.model.module_tree import ModuleNode
    from inspector.gui import details

    index = open_index(ZOO / "llama_gqa.onnx")
    calls = index.provenance.calls
    module = ModuleNode("model", "LlamaModel", calls=list(range(len(calls))), node_count=1_234)
    monkeypatch.setattr(details, "MAX_MODULE_CALLS", 50)
    from PySide6.QtGui import QTextDocument

    doc = QTextDocument()
    doc.setHtml(str(details.describe(index, module)))
    text = doc.toPlainText()
    assert f"\nAten calls\n{len(calls):,}\n" in text and "\nNodes\n1,234\n" in text
    assert f"… {len(calls) - 50} more calls: the filter box finds them by the module's path" in text
    assert sum(1 for c in calls[:50] if f"{c.target} {c.name}" in text) == 50 and calls[50].name not in text.split()
