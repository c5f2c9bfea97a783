"""Rows are told apart at 1024×700: no two sibling rows of the functions tree (families, overloads, call sites),
the modules tree, or the search results read the same once elided, on every real export of the zoo. Qt's middle
elision made Whisper's encoder and decoder SDPA calls both read ``scaled_do…elf_attn)``.

Rows whose whole texts are equal cannot be told apart by any elision; they are counted apart (and are none in
the trees)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QModelIndex
from PySide6.QtWidgets import QApplication, QTreeView

from inspector.gui.distinct import DistinctDelegate, distinct_elide, shared, unique_ends
from tests.conftest import ZOO

MODELS = sorted(ZOO.glob("*.onnx"))


def _open(qtbot: Any, window: Any, path: Path) -> None:
    window.resize(1024, 700)
    with qtbot.waitSignal(window.reviews_listed, timeout=60000):
        window.open_path(path)
    QApplication.processEvents()


def _sibling_clashes(view: QTreeView, names: DistinctDelegate, parent: QModelIndex, where: str) -> list[str]:
    """Every parent's rows, expanded: the groups of siblings with different texts that read the same."""
    model = view.model()
    while model.canFetchMore(parent):
        model.fetchMore(parent)
    rows = [model.index(r, 0, parent) for r in range(model.rowCount(parent))]
    for row in rows:
        view.expand(row)
    QApplication.processEvents()
    shown = Counter(names.shown_text(row) for row in rows)
    full = {names.shown_text(row): set() for row in rows}
    for row in rows:
        full[names.shown_text(row)].add(str(row.data()))
    clashes = [f"{where}: {sorted(full[text])} read {text!r}" for text, n in shown.items()
               if n > 1 and len(full[text]) > 1]
    # the style draws the row's text as elided here: it never cuts it again at its end, the part kept here
    clashes += [f"{where}: {row.data()!r} elided {ours!r}, drawn {drawn!r}" for row in rows
                for ours, drawn in [names.elided_text(row)] if ours != drawn]
    for row in rows:
        clashes += _sibling_clashes(view, names, row, where)
    return clashes


def _elided(view: QTreeView, names: DistinctDelegate, parent: QModelIndex) -> int:
    model = view.model()
    rows = [model.index(r, 0, parent) for r in range(model.rowCount(parent))]
    return sum((names.shown_text(r) != r.data()) + _elided(view, names, r) for r in rows)


@pytest.mark.parametrize("path", MODELS, ids=[p.stem for p in MODELS])
def test_no_two_sibling_rows_read_the_same_at_1024x700(qtbot, window, path):
    _open(qtbot, window, path)
    left = window.left
    assert left.width() < 360  # the trees' share of a 1024 px window: names are elided in it
    clashes = _sibling_clashes(left.family_view, left.family_names, QModelIndex(), "functions")
    window.trees.setCurrentWidget(left.module_view)
    clashes += _sibling_clashes(left.module_view, left.module_names, QModelIndex(), "modules")
    index = window.index
    assert index is not None
    families = sorted(index.families, key=lambda f: -f.call_count)
    ops = Counter(n.op_type for n in index.model.proto.graph.node)
    queries = [families[0].label.split("::")[-1]] if families else []
    queries += [ops.most_common(1)[0][0]] if ops else []
    panel = window.search_panel
    window.trees.setCurrentWidget(panel)
    for query in queries:
        panel.box.setText(query)
        panel.run()
        QApplication.processEvents()
        items = [panel.results.item(r) for r in range(panel.results.count())]
        assert items, query
        # two results are two places: a call's nodes carry the same metadata, so the row names the node too
        whole = Counter(item.text() for item in items)
        clashes += [f"search {query!r}: {n} results read {t!r} whole" for t, n in whole.items() if n > 1]
        texts = Counter(panel.names.shown_text(panel.results.indexFromItem(i)) for i in items)
        fulls: dict[str, set[str]] = {}
        for item in items:
            fulls.setdefault(panel.names.shown_text(panel.results.indexFromItem(item)), set()).add(item.text())
        clashes += [f"search {query!r}: {sorted(fulls[t])} read {t!r}" for t, n in texts.items()
                    if n > 1 and len(fulls[t]) > 1]
    assert clashes == []


def test_whisper_sdpa_calls_read_apart_and_keep_their_fx_names(qtbot, window):
    """The issue's case: encoder self-attention, decoder self-attention and decoder cross-attention SDPA calls."""
    _open(qtbot, window, ZOO / "whisper.onnx")
    left = window.left
    fam = window.index.family("aten_call", "aten", "scaled_dot_product_attention")
    calls = [c for ov in fam.overloads for c in ov.aten_calls]
    assert [c.name for c in calls] == ["scaled_dot_product_attention", "scaled_dot_product_attention_1",
                                       "scaled_dot_product_attention_2"]
    shown = []
    for call in calls:
        proxy = window.family_filter.mapFromSource(window.families.index_of(call))
        left.family_view.expand(proxy.parent())
        QApplication.processEvents()
        shown.append(left.family_names.shown_text(proxy))
    assert len(set(shown)) == 3
    assert all("…" in s for s in shown)  # the column is too narrow for them whole
    assert _elided(left.family_view, left.family_names, QModelIndex()) > 0


def test_elision_keeps_where_a_row_differs_and_the_end() -> None:
    texts = ["linear_1  (model.encoder.layers.0.self_attn.k_proj)",
             "linear_10  (model.decoder.layers.0.encoder_attn.q_proj)",
             "linear  (model.encoder.layers.0.self_attn.q_proj)"]
    points = shared(texts)
    assert points == [(6, 8), (6, 8), (6,)]  # "linear" is shared by all three; linear_1 and linear_10 by two

    def fits(n: int) -> Any:
        return lambda s: len(s) <= n

    assert distinct_elide(texts[0], points[0], fits(100)) == texts[0]
    assert distinct_elide(texts[0], points[0], fits(20)) == "linear_1 …tn.k_proj)"
    assert distinct_elide(texts[1], points[1], fits(20)) == "linear_10…tn.q_proj)"
    assert distinct_elide(texts[2], points[2], fits(20)) == "linear …attn.q_proj)"
    paths = ["main//blocks.0/blocks.0.3/n1/TSNorm", "main//blocks.0/blocks.0.2/n1/TSNorm",
             "main//blocks.1/blocks.1.3/n1/TSNorm"]
    points = shared(paths)
    assert points == [(13, 24), (13, 24), (13,)]
    # (a number keeps the name of the list it indexes: "…0…3/n1/TSNorm" before)
    assert [distinct_elide(p, q, fits(20)) for p, q in zip(paths, points, strict=True)] == [
        "…blocks.0…0.3…TSNorm", "…blocks.0…0.2…TSNorm", "…blocks.1…/n1/TSNorm"]
    assert [distinct_elide(p, q, fits(8)) for p, q in zip(paths, points, strict=True)] == [
        "…0.3…orm", "…0.2…orm", "…s.1…orm"]


def test_a_call_row_keeps_its_layer_and_its_fx_name() -> None:
    """A call row reads module path › FX name (``AtenCall.place``), as the signature panel and search write a call:
    the layer is where sibling rows first differ, and the FX name, which no other call has, is kept at the end even
    where the column is too narrow for the path's differences. Swin's two softmax calls read
    ``softmax  …ks.0.attention)`` and ``softmax_1…s.0.attention)`` with the FX name first: the layers were cut."""
    texts = ["encoder.layers.0.blocks.0.attention › softmax", "encoder.layers.1.blocks.0.attention › softmax_1"]
    points, ends = shared(texts), unique_ends(texts)
    assert ends == [1, 1]  # ("x" and "1": no other row ends so)

    def fits(n: int) -> Any:
        return lambda s: len(s) <= n

    assert [distinct_elide(t, p, fits(30), end=e) for t, p, e in zip(texts, points, ends, strict=True)] == [
        "…layers.0….attention › softmax", "…layers.1…ttention › softmax_1"]
    addmm = ["transformer.h.0.attn.c_attn › addmm", "transformer.h.0.mlp.c_fc › addmm_2",
             "transformer.h.1.mlp.c_fc › addmm_6"]
    points, ends = shared(addmm), unique_ends(addmm)
    # the first row keeps its end (without: "…h.0…attn…")
    assert [distinct_elide(t, p, fits(10), end=e) for t, p, e in zip(addmm, points, ends, strict=True)] == [
        "…attn…ddmm", "…h.0…mlp…2", "…h.1…dmm_6"]
    assert [distinct_elide(t, p, fits(18), end=e) for t, p, e in zip(addmm, points, ends, strict=True)] == [
        "…h.0…attn… › addmm", "…h.0…mlp…› addmm_2", "…h.1…_fc › addmm_6"]
    # calls of one module (a filter for "layers.3.self" keeps two of an overload): the room goes to the end, the FX
    # name and its module, not to the start they share ("model.layers.3.self_at…68")
    adds = ["model.layers.3.self_attn › add_68", "model.layers.3.self_attn › add_69"]
    points, ends = shared(adds), unique_ends(adds)
    assert [distinct_elide(t, p, fits(24), end=e) for t, p, e in zip(adds, points, ends, strict=True)] == [
        "…rs.3.self_attn › add_68", "…rs.3.self_attn › add_69"]


def test_a_guess_of_the_width_changes_how_often_it_is_measured_not_the_result() -> None:
    """The delegate hands ``distinct_elide`` a cheap estimate (character widths added up) beside Qt's measure: the
    estimate only says where to look first. Right, off by a few characters either way, or always wrong, the text
    shown is the one the measure alone gives; when the estimate is right, it is measured about half as often."""
    import random

    rng = random.Random(7)
    texts = [f"{rng.choice(['mul', 'linear', 'add'])}_{rng.randrange(300)}_L{rng.randrange(9)}  "
             f"(model.layers.{rng.randrange(30)}.{rng.choice(['self_attn.q_proj', 'mlp.up_proj', 'norm'])})"
             for _ in range(120)]
    points = shared(texts)
    for width in (6, 11, 20, 27, 40):
        _same_with_any_guess(texts, points, width)


def _same_with_any_guess(texts: list[str], points: list[tuple[int, ...]], width: int) -> None:
    measured = [0, 0, 0]

    def fits(s: str, side: int = 0) -> bool:
        measured[side] += 1
        return len(s) <= width

    rows = list(zip(texts, points, strict=True))
    plain = [distinct_elide(t, q, fits) for t, q in rows]
    for guess in (lambda s: len(s) <= width, lambda s: len(s) <= width + 3, lambda s: len(s) <= width - 2,
                  lambda s: True, lambda s: False):
        assert [distinct_elide(t, q, lambda s: fits(s, 2), guess) for t, q in rows] == plain
    assert [distinct_elide(t, q, lambda s: fits(s, 1), lambda s: len(s) <= width) for t, q in rows] == plain
    assert measured[1] * 5 < measured[0] * 3, (width, measured)


def test_where_a_row_differs_is_the_prefix_it_shares_with_each_sibling():
    """``shared`` against its definition (the distinct lengths of the prefixes a text shares with every other),
    on random texts; it follows "next smaller" links instead of walking every sibling per row (26 s for the
    14,000 call rows of one overload before)."""
    import random

    from inspector.gui.distinct import _common, shared

    rng = random.Random(7)
    for _ in range(2000):
        texts = ["".join(rng.choice("ab.") for _ in range(rng.randint(0, 8))) for _ in range(rng.randint(0, 25))]
        expected = [tuple(sorted({_common(t, u) for j, u in enumerate(texts) if j != i}))
                    for i, t in enumerate(texts)]
        assert shared(texts) == expected, texts


def test_the_functions_tree_hands_over_a_parents_texts_as_its_rows_show_them(qtbot, window):
    """``child_texts`` (the elision's one call for a parent's row texts) gives what ``data`` gives row by row, for
    every parent of a real model's tree, and nothing while the filter hides some of a parent's rows."""
    _open(qtbot, window, ZOO / "t5_noopt.onnx")
    proxy = window.family_filter
    parents = [QModelIndex()]
    checked = 0
    while parents:
        parent = parents.pop()
        texts = proxy.child_texts(parent)
        assert texts == [str(proxy.index(r, 0, parent).data() or "") for r in range(proxy.rowCount(parent))]
        checked += len(texts)
        parents += [proxy.index(r, 0, parent) for r in range(proxy.rowCount(parent)) if proxy.hasChildren(
            proxy.index(r, 0, parent)) and not proxy.canFetchMore(proxy.index(r, 0, parent))]
    assert checked > 60
    window.filter_box.set_now("transpose")
    assert proxy.child_texts(QModelIndex()) is None
    family = proxy.index(0, 0)
    assert proxy.child_texts(family) == [str(proxy.index(r, 0, family).data() or "")
                                         for r in range(proxy.rowCount(family))]
