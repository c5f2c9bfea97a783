"""Side by side: changes grouped by family, both graphs coloured, old beside new, sides kept in step."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QSettings, Qt, QThreadPool

from inspector.core.diff import diff_models
from inspector.core.model.calls import AtenCall
from inspector.core.model.index import open_index
from inspector.core.model.keys import MAIN, FunctionKey
from inspector.gui.compare import ADDED, CHANGED, REMOVED, CompareWindow
from inspector.gui.main_window import MainWindow
from tests.conftest import FIXTURES, ZOO


@pytest.fixture
def compare(qtbot):
    w = CompareWindow()
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    yield w
    QThreadPool.globalInstance().waitForDone(30000)


def _load(qtbot, w: CompareWindow, a: Path, b: Path) -> None:
    with qtbot.waitSignal(w.pair_loaded, timeout=60000):
        w.open_pair(a, b)


def _module_of(model: str, fx_name: str) -> str:
    """The module of an FX node as torch's truth file says."""
    import json

    return next(f["module"] for f in json.loads((ZOO / f"{model}.truth.json").read_text())["fx_nodes"]
                if f["name"] == fx_name)


def _rows(w: CompareWindow) -> list[tuple[str, object]]:
    out = []
    for i in range(w.changes.topLevelItemCount()):
        group = w.changes.topLevelItem(i)
        for j in range(group.childCount()):
            out.append((group.text(0), group.child(j)))
    return out


def test_head_count_change_shows_the_scale_old_beside_new(qtbot, compare: CompareWindow):
    _load(qtbot, compare, FIXTURES / "dynamo_block.onnx", FIXTURES / "dynamo_block_h4.onnx")
    groups = {g for g, _row in _rows(compare)}
    assert any("scaled_dot_product_attention" in g for g in groups) and any("aten::view" in g for g in groups)
    sdpa_scale = next(row for g, row in _rows(compare) if "scaled_dot" in g and "0.594" in row.text(0))
    assert sdpa_scale.text(0) == "scale (Mul.B): 0.59460354 → 0.70710677"  # names the value, old and new
    # the first call, in its module, and how many more
    assert sdpa_scale.text(1) == "layers.0.attn › scaled_dot_product_attention and 1 more"  # (make_fixtures.py)
    with qtbot.waitSignal(compare.change_shown, timeout=60000):
        compare.changes.setCurrentItem(sdpa_scale)
    assert isinstance(compare.side_a.current_scope(), AtenCall)
    assert isinstance(compare.side_b.current_scope(), AtenCall)
    details = compare.details.toPlainText()
    assert "0.59460354" in details and "0.70710677" in details
    marked_a = {i: it.mark for i, it in compare.side_a.graph.items_by_id.items() if it.mark}
    marked_b = {i: it.mark for i, it in compare.side_b.graph.items_by_id.items() if it.mark}
    assert marked_a and marked_b and set(marked_a.values()) == {CHANGED} == set(marked_b.values())


def test_optimizer_differences_colour_added_and_removed_nodes(qtbot, compare: CompareWindow):
    _load(qtbot, compare, FIXTURES / "dynamo_block.onnx", FIXTURES / "dynamo_block_noopt.onnx")
    body = next(row for g, row in _rows(compare) if "scaled_dot" in g and "body" in row.text(0))
    with qtbot.waitSignal(compare.change_shown, timeout=60000):
        compare.changes.setCurrentItem(body)
    colours_b = {it.mark for it in compare.side_b.graph.items_by_id.values() if it.mark}
    colours_a = {it.mark for it in compare.side_a.graph.items_by_id.values() if it.mark}
    assert ADDED in colours_b and REMOVED not in colours_b
    assert ADDED not in colours_a


def test_function_change_and_synchronised_selection(qtbot, compare: CompareWindow, tmp_path: Path):
    import onnx

    model = onnx.load(str(FIXTURES / "overloads.onnx"))
    for f in model.functions:
        if f.overload == "perm_0231":
            for a in f.node[0].attribute:
                if a.name == "perm":
                    a.ints[:] = [0, 3, 2, 1]
    changed = tmp_path / "changed.onnx"
    onnx.save(model, str(changed))
    _load(qtbot, compare, FIXTURES / "overloads.onnx", changed)
    (group, row), = _rows(compare)
    assert "local.tr" in group
    with qtbot.waitSignal(compare.change_shown, timeout=60000):
        compare.changes.setCurrentItem(row)
    assert compare.side_a.current_scope() == FunctionKey("local", "tr", "perm_0231")
    assert compare.side_a.graph.items_by_id["n:0"].mark == CHANGED
    assert "[0, 2, 3, 1]" in compare.details.toPlainText() and "[0, 3, 2, 1]" in compare.details.toPlainText()
    compare.side_a.graph.select("n:0")
    assert compare.side_b.graph.selected().id == "n:0"
    bar_a, bar_b = compare.side_a.graph.verticalScrollBar(), compare.side_b.graph.verticalScrollBar()
    if bar_a.maximum() > 0 and bar_b.maximum() > 0:
        bar_a.setValue(bar_a.maximum())
        assert bar_b.value() == bar_b.maximum()


def test_renamed_copy_is_equal(qtbot, compare: CompareWindow):
    _load(qtbot, compare, FIXTURES / "dynamo_block.onnx", FIXTURES / "dynamo_block_renamed.onnx")
    assert compare.changes.topLevelItemCount() == 0
    assert "equal" in compare.summary.text()
    assert compare.side_a.current_scope() == MAIN == compare.side_b.current_scope()  # nothing changed: both mains
    qtbot.waitUntil(lambda: bool(compare.side_a.graph.items_by_id) and bool(compare.side_b.graph.items_by_id),
                    timeout=30000)
    ga, gb = compare.side_a.graph, compare.side_b.graph
    box = next(i for i, item in ga.items_by_id.items() if item.node.kind not in ("input", "output"))
    ga.select(box)  # nothing aligned: the same box, as it is the same op or call in a renamed copy
    assert gb.selected().id == box and gb.selected().label == ga.selected().label


def test_compare_with_from_the_main_window(qtbot, tmp_path: Path):
    w = MainWindow(QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    with qtbot.waitSignal(w.model_loaded, timeout=30000):
        w.open_path(FIXTURES / "dynamo_block.onnx")
    compare = w.open_compare(FIXTURES / "dynamo_block_h4.onnx")
    assert compare is not None
    with qtbot.waitSignal(compare.pair_loaded, timeout=60000):
        pass
    assert compare.pair is not None and not compare.pair.diff.equal
    assert "dynamo_block.onnx" in compare.windowTitle()
    compare.close()
    QThreadPool.globalInstance().waitForDone(30000)
    _ = Qt


def test_compare_from_the_main_window_compares_the_model_as_shown(qtbot, tmp_path: Path):
    # the open model is side A as it is in the window: not read again (1.8 s at 100k nodes), so a file overwritten
    # since it was opened does not change what is compared
    shown = tmp_path / "model.onnx"
    shutil.copyfile(FIXTURES / "dynamo_block.onnx", shown)
    w = MainWindow(QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    with qtbot.waitSignal(w.model_loaded, timeout=30000):
        w.open_path(shown)
    shutil.copyfile(FIXTURES / "dynamo_block_h4.onnx", shown)  # the file changes on disk after opening
    compare = w.open_compare(FIXTURES / "dynamo_block_h4.onnx")
    assert compare is not None
    with qtbot.waitSignal(compare.pair_loaded, timeout=60000):
        pass
    pair = compare.pair
    assert pair is not None and pair.a is w.index
    expected = diff_models(open_index(FIXTURES / "dynamo_block.onnx"), open_index(FIXTURES / "dynamo_block_h4.onnx"))
    assert not pair.diff.equal
    assert [(c.kind, c.where, c.old, c.new) for c in pair.diff.changes] == [
        (c.kind, c.where, c.old, c.new) for c in expected.changes]
    compare.close()
    QThreadPool.globalInstance().waitForDone(30000)


@pytest.mark.parametrize(("keys", "name", "expected"), [
    ("Ctrl+E", "d.md", "0.70710677"),
    ("Ctrl+Shift+E", "r.html", "0.70710677"),
    ("Ctrl+E", "d.json", '"value_changed"'),
])
def test_the_compare_menu_exports_the_diff_and_the_report(qtbot, compare: CompareWindow, tmp_path: Path,
                                                         monkeypatch, keys, name, expected):
    from PySide6.QtGui import QKeySequence
    from PySide6.QtWidgets import QFileDialog

    _load(qtbot, compare, FIXTURES / "dynamo_block.onnx", FIXTURES / "dynamo_block_h4.onnx")
    menu = compare.menuBar().actions()[0].menu()
    assert [a.text() for a in menu.actions() if a.text()] == [
        "Export &Diff…", "Export &Report with the Diff…", "&Close", "&Quit"]
    out = tmp_path / name
    asked = []
    monkeypatch.setattr(QFileDialog, "getSaveFileName",
                        lambda _w, _t, suggested, _f, **_k: (asked.append(suggested), (str(out), ""))[1])
    compare.changes.setFocus()
    with qtbot.waitSignal(compare.exported, timeout=60000):
        seq = QKeySequence(keys)
        qtbot.keyClick(compare.changes, seq[0].key(), seq[0].keyboardModifiers())
    assert asked[0].endswith("dynamo_block-vs-dynamo_block_h4." + ("diff" if keys == "Ctrl+E" else "report")
                             + ".html")
    assert expected in out.read_text()


def test_the_compare_window_refuses_to_overwrite_an_input(qtbot, compare: CompareWindow, tmp_path: Path):
    from inspector.gui.compare_export import export

    a = tmp_path / "a.onnx"
    a.write_bytes((FIXTURES / "dynamo_block.onnx").read_bytes())
    _load(qtbot, compare, a, FIXTURES / "dynamo_block_h4.onnx")
    before = a.read_bytes()
    export(compare, "diff", a)
    QThreadPool.globalInstance().waitForDone(30000)
    assert a.read_bytes() == before and "refusing" in compare.statusBar().currentMessage()


def test_a_click_selects_the_aligned_node_on_the_other_side_and_both_panels_describe_it(
        qtbot, compare: CompareWindow):
    """gpt2 against gpt2_dynamic: the first SDPA call's body grows from 11 to 18 nodes (shape arithmetic for the
    dynamic sequence), so a box's partner is found by the diff engine's alignment, not by its id."""
    _load(qtbot, compare, ZOO / "gpt2.onnx", ZOO / "gpt2_dynamic.onnx")
    body = next(row for g, row in _rows(compare)
                if "scaled_dot" in g and row.text(1) == f"{_module_of('gpt2', 'scaled_dot_product_attention')} › "
                "scaled_dot_product_attention" and "body" in row.text(0))
    with qtbot.waitSignal(compare.change_shown, timeout=60000):
        compare.changes.setCurrentItem(body)
    ga, gb = compare.side_a.graph, compare.side_b.graph
    call_a, call_b = compare.side_a.current_scope(), compare.side_b.current_scope()
    assert isinstance(call_a, AtenCall) and isinstance(call_b, AtenCall)
    assert call_a.name == call_b.name == "scaled_dot_product_attention"
    ops_a = [compare.pair.a.proto.graph.node[p[0]].op_type for p in sorted(call_a.node_paths)]
    ops_b = [compare.pair.b.proto.graph.node[p[0]].op_type for p in sorted(call_b.node_paths)]
    assert ops_a == ["Reshape", "Transpose", "Reshape", "Mul", "Mul", "MatMul", "Add", "Softmax", "IsNaN", "Where",
                     "MatMul"]
    assert ops_b == ["Shape", "Slice", "Slice", "Slice", "Concat", "Reshape", "Transpose", "Concat", "Reshape", "Mul",
                     "Mul", "Where", "MatMul", "Add", "Softmax", "IsNaN", "Where", "MatMul"]
    first_a, first_b = sorted(call_a.node_paths)[0][0], sorted(call_b.node_paths)[0][0]
    # A's k-th node pairs with B's node of the same operator, skipping B's added shape arithmetic
    expected = dict(zip(range(11), [5, 6, 8, 9, 10, 12, 13, 14, 15, 16, 17]))
    for k, j in expected.items():
        ga.select(f"n:{first_a + k}")
        assert gb.selected().id == f"n:{first_b + j}"
        assert ops_a[k] == ops_b[j]
    ga.select(f"n:{first_a}")  # the first Reshape: both info panels describe their own node
    name_a = compare.pair.a.proto.graph.node[first_a].name
    name_b = compare.pair.b.proto.graph.node[first_b + 5].name
    info_a, info_b = compare.twin.a.info.toPlainText(), compare.twin.b.info.toPlainText()
    assert "Reshape" in info_a and name_a in info_a and name_b not in info_a
    assert "Reshape" in info_b and name_b in info_b
    gb.select(f"n:{first_b + 12}")  # and back: B's first MatMul selects A's
    assert ga.selected().id == f"n:{first_a + 5}"
    gb.select(f"n:{first_b}")  # B's Shape is only in B: A has nothing selected and says so
    assert gb.items_by_id[f"n:{first_b}"].mark == ADDED
    assert ga.selected() is None and "No aligned box" in compare.twin.a.info.toPlainText()
    assert {ga.items_by_id[i].mark for i in ga.items_by_id if i.startswith("n:")} == {None}
    # the scale constant (0.5 in A, read by the first Mul) pairs with B's constant read by B's first Mul
    scale_a = compare.pair.a.proto.graph.node[first_a + 3].input[1]
    scale_b = compare.pair.b.proto.graph.node[first_b + 9].input[1]
    ga.select(f"const:{scale_a}")
    assert gb.selected().id == f"const:{scale_b}"


def test_change_rows_read_whole_at_1366x768(qtbot, compare: CompareWindow):
    """Each change row draws what changed (values old and new) and where on two lines: at 1366x768 neither needs
    eliding on the zoo's scale pair, where the value and the argument it came from make the longest line."""
    compare.resize(1366, 768)
    _load(qtbot, compare, ZOO / "pair_scale_a.onnx", ZOO / "pair_scale_b.onnx")
    qtbot.waitUntil(lambda: compare.changes.visualItemRect(_rows(compare)[0][1]).height() > 0)
    groups = {g for g, _row in _rows(compare)}
    assert any(g.startswith("aten::scaled_dot_product_attention") for g in groups)  # the family names the group
    fm = compare.changes.fontMetrics()
    for _g, row in _rows(compare):
        rect = compare.changes.visualItemRect(row)
        assert rect.height() >= 2 * fm.height()  # two lines
        for line in (row.text(0), f"in {row.text(1)}"):
            assert fm.horizontalAdvance(line) <= rect.width() - 8, line
    sdpa = [row for g, row in _rows(compare) if g.startswith("aten::scaled_dot_product_attention")]
    names = ("scaled_dot_product_attention", "scaled_dot_product_attention_1")
    assert [row.text(1) for row in sdpa] == [f"{_module_of('pair_scale_a', name)} › {name}" for name in names]
    assert all(row.text(0).startswith("scale (Mul.B): ") and " → 0.5477226" in row.text(0) for row in sdpa)


def test_showing_a_change_reads_no_pass_over_all_calls_on_the_gui_thread(qtbot, compare: CompareWindow):
    """The calls by name and the graph maps of both sides are made with the pair, off the GUI thread (80k calls
    and 100k nodes at scale); showing a change only looks them up, and finds the SDPA call on each side."""
    import threading

    passes: list[str] = []

    class Watched(list):
        def __iter__(self):
            passes.append(threading.current_thread().name)
            return super().__iter__()

    _load(qtbot, compare, FIXTURES / "dynamo_block.onnx", FIXTURES / "dynamo_block_h4.onnx")
    for index in (compare.pair.a, compare.pair.b):
        index.provenance.calls = Watched(index.provenance.calls)
    sdpa_scale = next(row for g, row in _rows(compare) if "scaled_dot" in g and "0.594" in row.text(0))
    with qtbot.waitSignal(compare.change_shown, timeout=60000):
        compare.changes.setCurrentItem(sdpa_scale)
    for side in (compare.side_a, compare.side_b):
        scope = side.current_scope()
        assert isinstance(scope, AtenCall) and scope.target == "aten::scaled_dot_product_attention"
    assert threading.main_thread().name not in passes


def test_closing_while_the_pair_is_opened_waits_for_nothing_and_the_pair_reports_to_no_one(
        qtbot, compare: CompareWindow, monkeypatch: pytest.MonkeyPatch):
    import threading

    from inspector.gui import compare as compare_module

    release, started, finished = threading.Event(), threading.Event(), threading.Event()
    real = compare_module._open_pair

    def slow(a: Path, b: Path):
        started.set()
        release.wait(30)  # until the test says: the window closes while this job runs
        try:
            return real(a, b)
        finally:
            finished.set()

    monkeypatch.setattr(compare_module, "_open_pair", slow)
    loaded: list[object] = []
    compare.pair_loaded.connect(loaded.append)
    compare.open_pair(FIXTURES / "dynamo_block.onnx", FIXTURES / "dynamo_block_h4.onnx")
    qtbot.waitUntil(started.is_set, timeout=10000)
    compare.close()  # with the job blocked: a close that waited for the pool would return only after 5 s
    assert not compare.isVisible() and not finished.is_set()  # closed while the job still ran
    release.set()
    qtbot.waitUntil(finished.is_set, timeout=60000)
    qtbot.wait(100)
    assert loaded == [] and compare.pair is None  # its result reported to no one


def _title_px(view, node_id: str) -> float:
    """The on-screen height of a box's title line, in pixels."""
    from PySide6.QtWidgets import QGraphicsSimpleTextItem

    item = view.items_by_id[node_id]
    title = next(c for c in item.childItems() if isinstance(c, QGraphicsSimpleTextItem))
    return view.mapFromScene(title.sceneBoundingRect()).boundingRect().height()


def test_a_change_row_click_centres_the_changed_node_on_both_sides_at_a_readable_zoom(qtbot, compare):
    """At 1366x768 the graphs get most of the height, and clicking ``scale (Mul.B): … → …`` selects the box holding
    the changed value (the constant fed to the Mul's B) on both sides, centred, its title at least 9 px tall (at
    the fit's floor it was ~6 px)."""
    compare.resize(1366, 768)
    _load(qtbot, compare, ZOO / "pair_scale_a.onnx", ZOO / "pair_scale_b.onnx")
    rows = [row for g, row in _rows(compare) if g.startswith("aten::scaled_dot_product_attention")]
    row = rows[1]
    assert row.text(0).startswith("scale (Mul.B): ")
    qtbot.waitUntil(lambda: compare.changes.visualItemRect(row).height() > 0)
    with qtbot.waitSignal(compare.change_shown, timeout=60000):
        qtbot.mouseClick(compare.changes.viewport(), Qt.MouseButton.LeftButton,
                         pos=compare.changes.visualItemRect(row).center())
    for side in (compare.side_a, compare.side_b):
        view = side.graph
        assert view.viewport().height() >= 380  # graphs, not info panels, get the height
        node = view.selected()
        assert node is not None
        assert node.id in {i for i, it in view.items_by_id.items() if it.mark == CHANGED}
        assert _title_px(view, node.id) >= 9
        box = view.mapFromScene(view.items_by_id[node.id].sceneBoundingRect()).boundingRect()
        assert view.viewport().rect().contains(box)  # wholly in view
        centre = view.viewport().rect().center()
        for bar, got, want in ((view.horizontalScrollBar(), box.center().x(), centre.x()),
                                (view.verticalScrollBar(), box.center().y(), centre.y())):
            if bar.minimum() < bar.value() < bar.maximum():  # room to centre it this way: it is centred
                assert abs(got - want) <= 2
    box_a, box_b = compare.side_a.graph.selected(), compare.side_b.graph.selected()
    assert compare.twin.partner(box_a.id, True) == box_b.id  # the aligned pair
    old, new = row.text(0).split("; ")[0].split(": ", 1)[1].split(" → ")  # "scale (Mul.B): 0.5 → 0.5477…; …"
    assert compare.twin.pairing.marks_a[box_a.id][1].endswith(f"-> {new}")  # the value this row names
    shown = [float(box.detail.rsplit("= ", 1)[1]) for box in (box_a, box_b)]  # "FLOAT[] = 0.547723": rounded
    assert shown == [pytest.approx(float(old), rel=1e-5), pytest.approx(float(new), rel=1e-5)]


def test_a_flat_export_against_its_fold_shows_the_folding_one_fact_a_line(qtbot, compare, tmp_path: Path):
    """The folded change's two sides were the raw mappings ``{flat: a}`` and ``{folded: b, calls: 70, …}``."""
    from inspector.cli import main as cli

    folded = tmp_path / "gpt2_folded.onnx"
    assert cli(["fold", str(ZOO / "gpt2.onnx"), "-o", str(folded)]) == 0
    _load(qtbot, compare, ZOO / "gpt2.onnx", folded)
    calls = len(open_index(ZOO / "gpt2.onnx").provenance.calls)
    row = next(row for _g, row in _rows(compare) if row.data(0, Qt.ItemDataRole.UserRole).kind == "folded")
    compare.changes.setCurrentItem(row)
    text = compare.details.toPlainText()
    assert "{" not in text and "}" not in text
    lines = text.splitlines()
    assert "flat: a" in lines and "folded: b" in lines and f"calls: {calls}" in lines and calls == 70


def test_the_report_with_the_diff_carries_a_s_reviews(qtbot, compare: CompareWindow, tmp_path: Path):
    """File > Export Report with the Diff writes A's report with A's reviews, as ``onnx-inspector report A --compare
    B`` does: it said "No review file was used" beside a sidecar holding a suspicious value and its note."""
    from inspector.api import report
    from inspector.core.model.index import open_index
    from inspector.core.review.store import ReviewStore, review_keys
    from inspector.core.specialise.specialiser import Specialiser
    from inspector.gui.compare_export import export

    a = tmp_path / "a.onnx"
    a.write_bytes((ZOO / "pair_heads_a.onnx").read_bytes())
    key, _obj = next(k for fa in Specialiser(open_index(a)).analyse_all() for k in review_keys(fa)
                     if k[0].kind == "value")
    store = ReviewStore(a)
    store.set(key, "suspicious", note="head count <b>8</b> baked in")
    _load(qtbot, compare, a, ZOO / "pair_heads_b.onnx")
    out = tmp_path / "a.report.html"
    with qtbot.waitSignal(compare.exported, timeout=60000):
        export(compare, "report", out)
    text = out.read_text()
    assert "No review file was used" not in text
    assert "head count &lt;b&gt;8&lt;/b&gt; baked in" in text
    command = report(str(a), compare=str(ZOO / "pair_heads_b.onnx")).text
    assert "head count &lt;b&gt;8&lt;/b&gt; baked in" in command


def test_a_call_one_side_lacks_shows_what_stands_in_for_it_there(qtbot, compare: CompareWindow):
    """bert against its unoptimised export: ``aten::add.Tensor`` calls added in B (the position ids' Add). A has no
    such call: its side shows the family's first call, and says that it stands in, not that it is the counterpart."""
    _load(qtbot, compare, ZOO / "bert.onnx", ZOO / "bert_noopt.onnx")
    added = next(row for g, row in _rows(compare) if g.startswith("aten::add") and row.text(0).startswith("call added"))
    with qtbot.waitSignal(compare.change_shown, timeout=60000):
        compare.changes.setCurrentItem(added)
    info_a, info_b = compare.twin.a.info.toPlainText(), compare.twin.b.info.toPlainText()
    scope_a = compare.side_a.current_scope()
    assert isinstance(scope_a, AtenCall) and scope_a.target == "aten::add.Tensor"
    assert info_a.startswith("A: not in A; shown for comparison: ") and "of the same family" in info_a
    assert "not in" not in info_b and info_b.startswith("B: ")
    # a change both sides have keeps its plain heads
    rewired = next(row for g, row in _rows(compare) if g.startswith("aten::add") and row.text(0).startswith("rewired"))
    with qtbot.waitSignal(compare.change_shown, timeout=60000):
        compare.changes.setCurrentItem(rewired)
    assert "not in" not in compare.twin.a.info.toPlainText() + compare.twin.b.info.toPlainText()


def test_a_body_change_row_too_long_for_the_list_keeps_its_start_and_a_value_row_both_ends(qtbot, compare):
    """A row reading ``old → new`` is elided in the middle, where neither value is; any other row at its end. The
    body change of llama_gqa's _unsafe_view against its unoptimised export read "body changed: 2 → 6 nodes: +5…oncat)
    -1 (constant INT64[4])" at 1366x768, its node edits cut out."""
    from inspector.gui.compare import ChangeRowDelegate

    compare.resize(1366, 768)
    _load(qtbot, compare, ZOO / "llama_gqa.onnx", ZOO / "llama_gqa_noopt.onnx")
    body, = [row for g, row in _rows(compare) if g.startswith("aten::_unsafe_view") and
             row.text(0) == "body changed: 2 → 6 nodes: +5 (Constant x4, Concat) -1 (constant INT64[4])"]
    fm = compare.changes.fontMetrics()
    index = compare.changes.indexFromItem(body)
    width = fm.horizontalAdvance("body changed: 2 → 6 nodes: +5 (Constant x4, Concat) -1 (con")
    what, where = ChangeRowDelegate.lines(index, fm, width)
    assert what.startswith("body changed: 2 → 6 nodes: +5 (Constant x4, Concat)") and what.endswith("…"), what
    assert where == fm.elidedText(f"in {_module_of('llama_gqa', '_unsafe_view_1')} › _unsafe_view_1 and 1 more",
                                  Qt.TextElideMode.ElideMiddle, width), where
    with qtbot.waitSignal(compare.change_shown, timeout=30000):
        compare.changes.setCurrentItem(body)
    details = compare.details.toPlainText()  # (read as the row reads: it said "2 -> 6 nodes" below "2 → 6 nodes")
    assert "2 → 6 nodes: +5 (Constant x4, Concat) -1 (constant INT64[4])" in details and "->" not in details
    _load(qtbot, compare, ZOO / "pair_eps_a.onnx", ZOO / "pair_eps_b.onnx")
    (_g, value), = _rows(compare)
    line = value.text(0)
    assert " → " in line
    old, new = line.rsplit(" → ", 1)
    index = compare.changes.indexFromItem(value)
    what, _where = ChangeRowDelegate.lines(index, fm, fm.horizontalAdvance(line) * 2 // 3)
    assert what.endswith(" → " + new) and what.startswith(old[:4]) and "…" in what, what


def test_an_initializer_change_shows_the_call_that_reads_it(qtbot, compare: CompareWindow, tmp_path: Path):
    """T5's position bias written out per head (the same sums, 64 elements instead of 16): its row shows add_22,
    which reads it, on both sides, not the whole main graph, where the bias is not drawn at all."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(ZOO / "t5.onnx"), load_external_data=False)
    t = next(t for t in model.graph.initializer if t.name == "where_2")
    t.CopyFrom(numpy_helper.from_array(np.ascontiguousarray(np.tile(numpy_helper.to_array(t), (1, 4, 1, 1))),
                                       "where_2"))
    onnx.save(model, str(tmp_path / "t5_per_head.onnx"))
    _load(qtbot, compare, ZOO / "t5.onnx", tmp_path / "t5_per_head.onnx")
    rows = _rows(compare)
    assert [(g, row.text(0)) for g, row in rows] == [
        ("initializers", "reshaped: where_2 FLOAT[1, 1, 4, 4] → FLOAT[1, 4, 4, 4]")]
    assert rows[0][1].text(1) == f"{_module_of('t5', 'add_22')} › add_22"  # (its second line: where it is read)
    with qtbot.waitSignal(compare.change_shown, timeout=60000):
        compare.changes.setCurrentItem(rows[0][1])
    for side in (compare.side_a, compare.side_b):
        scope = side.current_scope()
        assert isinstance(scope, AtenCall) and scope.name == "add_22"
    # (its box selected on both sides: with its values where it is small enough to show them, as an input where not)
    selected = [side.graph.selected() for side in (compare.side_a, compare.side_b)]
    assert [s.id if s is not None else None for s in selected] == ["const:where_2", "in:where_2"]


def test_a_change_says_what_the_reviews_of_a_said_of_its_body(qtbot, compare: CompareWindow, tmp_path: Path):
    """A re-export compared with the reviewed model showed its changes without a word of their reviews: the epsilon
    marked ok in A, with a note, had to be looked up again in the main window. The change's details now list what
    A's sidecar says of the body it is in, in each status's colour; a body nobody reviewed says nothing."""
    from inspector.core.review.store import ReviewStore, review_keys, reviewed_value
    from inspector.core.specialise.categories import short_where
    from inspector.core.specialise.specialiser import SpecialisedValue, Specialiser
    from inspector.gui.theme import STATUS_COLOURS

    model = tmp_path / "pair_eps_a.onnx"
    shutil.copy(ZOO / "pair_eps_a.onnx", model)
    store = ReviewStore(model)
    items = [(k, o) for a in Specialiser(open_index(model)).analyse_all() for k, o in review_keys(a)
             if k.family == "aten::layer_norm"]
    (key, eps), = [(k, o) for k, o in items if isinstance(o, SpecialisedValue) and short_where(o).endswith("epsilon")]
    store.set(key, "ok", "eps <1e-5> as configured", reviewed_value(eps))
    body_key, body = next((k, o) for k, o in items if k.kind == "overload")
    store.set(body_key, "suspicious", "", reviewed_value(body))
    _load(qtbot, compare, model, ZOO / "pair_eps_b.onnx")
    rows = _rows(compare)
    (changed,) = [row for g, row in rows if g.startswith("aten::layer_norm")]
    with qtbot.waitSignal(compare.change_shown, timeout=60000):
        compare.changes.setCurrentItem(changed)
    text = compare.details.toPlainText()
    assert "Reviewed in A (the body this change is in)" in text and "before it changed" not in text
    assert "body: suspicious" in text
    assert f"LayerNormalization.epsilon = {eps.literal.value:g}: ok — eps <1e-5> as configured" in text
    assert STATUS_COLOURS["ok"] in compare.details.toHtml() and "<1e-5>" not in compare.details.toHtml()

    compare.close()
    other = CompareWindow()
    qtbot.addWidget(other)
    _load(qtbot, other, ZOO / "pair_eps_a.onnx", ZOO / "pair_eps_b.onnx")  # (no sidecar beside it)
    (changed,) = [row for g, row in _rows(other) if g.startswith("aten::layer_norm")]
    with qtbot.waitSignal(other.change_shown, timeout=60000):
        other.changes.setCurrentItem(changed)
    assert "Reviewed in A" not in other.details.toPlainText()
    other.close()


def test_a_review_made_in_the_main_window_is_said_in_its_compare(qtbot, tmp_path: Path):
    """The main window's review of a value, then Compare with… a re-export: the change of that value says it was
    reviewed, with the note typed (the sidecar the review was saved to, read with the pair)."""
    model = tmp_path / "pair_eps_a.onnx"
    shutil.copy(ZOO / "pair_eps_a.onnx", model)
    w = MainWindow(QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    w.show()
    with qtbot.waitSignal(w.model_loaded, timeout=30000):
        w.open_path(model)
    qtbot.waitUntil(lambda: w.session.listed, timeout=30000)
    w.filter_box.set_now("layer_norm")
    proxy = w.family_filter
    family = proxy.index(0, 0)
    with qtbot.waitSignal(w.selection_shown, timeout=30000):
        w.family_view.setCurrentIndex(proxy.index(0, 0, family))
    (eps,) = [s for s in w.signature.specialised() if s.literal.name == "epsilon"]
    w.signature.value_clicked.emit(eps)
    w.review_bar.note.setText("as configured")
    with qtbot.waitSignal(w.review_saved, timeout=5000):
        w.review_bar.buttons["ok"].click()
    compare = w.open_compare(ZOO / "pair_eps_b.onnx")
    assert compare is not None
    with qtbot.waitSignal(compare.pair_loaded, timeout=60000):
        pass
    (changed,) = [row for g, row in _rows(compare) if g.startswith("aten::layer_norm")]
    with qtbot.waitSignal(compare.change_shown, timeout=60000):
        compare.changes.setCurrentItem(changed)
    assert f"LayerNormalization.epsilon = {eps.literal.value:g}: ok — as configured" in compare.details.toPlainText()
    compare.close()
    w.close()
    QThreadPool.globalInstance().waitForDone(30000)


def test_a_changed_initializer_says_what_the_reviews_of_a_said_of_the_call_that_reads_it(qtbot, compare: CompareWindow,
                                                                                         tmp_path: Path):
    """Qwen2 re-exported with another ``rope_theta`` changes its rotary tables, initializers read by the rotary
    ``mul`` calls, whose body had been marked suspicious in A: the change said nothing of it. An initializer's change
    now says the reviews of the body of the first call that reads it (as its graphs show that call); here Llama's
    cos table, changed in a copy."""
    from tests.builders import reviewed_cos_table

    model, other = reviewed_cos_table(tmp_path, "the cos table is baked in")
    _load(qtbot, compare, model, other)
    (row,) = [row for g, row in _rows(compare) if g == "initializers"]
    with qtbot.waitSignal(compare.change_shown, timeout=60000):
        compare.changes.setCurrentItem(row)
    text = compare.details.toPlainText()
    assert "Reviewed in A (the body of the first call that reads it)" in text
    assert "body: suspicious — the cos table is baked in" in text


def test_a_call_b_added_is_placed_in_its_module_of_b(qtbot, compare: CompareWindow):
    """A call only B has is named in B's module (its row read ``in layer_norm_1``: it was looked up in A), and says
    which call of A stands in for it (``tests/evidence/parallel_norms_*``, GPT-NeoX's parallel LayerNorms)."""
    import ast

    import onnx

    evidence = ZOO.parent / "evidence"
    _load(qtbot, compare, evidence / "parallel_norms_a.onnx", evidence / "parallel_norms_b.onnx")
    (row,) = [row for g, row in _rows(compare) if g.startswith("aten::layer_norm")]
    change = row.data(0, Qt.ItemDataRole.UserRole)
    assert change.kind == "call_added"
    node = next(n for n in onnx.load(str(evidence / "parallel_norms_b.onnx")).graph.node
                if any(p.key == "pkg.torch.onnx.fx_node" and p.value.startswith(f"%{change.where} ")
                       for p in n.metadata_props))
    module = ast.literal_eval(next(p.value for p in node.metadata_props if p.key == "pkg.torch.onnx.name_scopes"))[-2]
    assert module == "norm2" and row.text(1) == f"{module} › {change.where}"
    assert "one call of A for two of B" in row.text(0)
    # A's side shows A's one LayerNorm call, read where B's added one is read, and says so
    (one,) = [n for n in onnx.load(str(evidence / "parallel_norms_a.onnx")).graph.node
              if n.op_type == "LayerNormalization"]
    fx = next(p.value for p in one.metadata_props if p.key == "pkg.torch.onnx.fx_node")
    with qtbot.waitSignal(compare.change_shown, timeout=60000):
        compare.changes.setCurrentItem(row)
    scope = compare.side_a.current_scope()
    assert isinstance(scope, AtenCall) and scope.name == fx.split(" ")[0][1:] == change.stand_in
    assert "not in A; shown for comparison" in compare.twin.a.info.toPlainText()
    assert "read where it is read" in compare.twin.a.info.toPlainText()


def test_a_changed_external_weight_shows_where_each_side_holds_it_line_by_line(qtbot, compare: CompareWindow,
                                                                              tmp_path: Path):
    """A weight held in each export's own weights file: its change says what differs (bytes compared) and its sides
    list file, offset and length a line each; ``external: {location: …}`` on one line pushed B's side out of view."""
    from tests.test_diff_external_bytes import _pair

    a, b, _old = _pair(tmp_path, delta=0.5)
    _load(qtbot, compare, a, b)
    (row,) = [row for g, row in _rows(compare) if g == "initializers"]
    with qtbot.waitSignal(compare.change_shown, timeout=60000):
        compare.changes.setCurrentItem(row)
    text = compare.details.toPlainText()
    assert "location: a.onnx.data" in text and "location: b.onnx.data" in text and "{" not in text
    assert "1 of " in text and " values differ" in text
    document = compare.details.document()
    document.setTextWidth(440)
    assert document.idealWidth() <= 440  # (both sides fit the panel's default width)
