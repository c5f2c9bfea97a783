"""Rows that read differently: a list or tree row too long for its column is elided so that what tells it apart
from its siblings stays visible, not in the middle as Qt does. Qt's middle elision made different rows read the
same: Whisper's encoder and decoder SDPA calls both read ``scaled_do…elf_attn)``, a TorchScript model showed
``main//bloc…/n1/TSNorm`` twice and six search results read ``hidden_states…aled_dot_product_attention``: siblings
share a long prefix (the module path down to the layer) and a suffix (the op or FX name), and the part between
them is what differs. Here a row keeps the path component where it first differs from each sibling, and as much of
its end (the FX or op name) and start as then fits: ``module…0.mlp.fc1``.

The texts are model strings, drawn by the item view as plain text (never markup)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import pairwise

from PySide6.QtCore import QAbstractItemModel, QModelIndex, QObject, QPersistentModelIndex
from PySide6.QtGui import QFontMetricsF
from PySide6.QtWidgets import QAbstractItemView, QStyle, QStyledItemDelegate, QStyleOptionViewItem

ELLIPSIS = "…"
SEPARATORS = frozenset(" ./()_›·:,-[]")  # a kept part starts after one of these: a whole path component
BACK_OFF = 16  # at most this many characters before the first difference are kept to start at a component


def shared(texts: Sequence[str]) -> list[tuple[int, ...]]:
    """Per text, where it first differs from each other text (the lengths of the prefixes it shares with them),
    without repeats: a row differs from one sibling at ``blocks.0`` and from another at ``fc1``. In sorted order the
    prefix shared with a text further away is the least of those shared by the neighbours between, so the distinct
    values are the new minima walking away from the text: followed from one to the next by "the next smaller
    neighbour" links (made in one pass each way), the work is linear in the rows and in the points kept. (A walk
    over every sibling per row was quadratic: 26 s for 14,000 call rows of one overload.)"""
    order = sorted(range(len(texts)), key=texts.__getitem__)
    adjacent = [_common(texts[a], texts[b]) for a, b in pairwise(order)]
    before, after = _smaller(adjacent, reverse=False), _smaller(adjacent, reverse=True)
    points: list[tuple[int, ...]] = [()] * len(texts)
    for pos, i in enumerate(order):
        found: set[int] = set()
        for k, links in ((pos - 1, before), (pos, after)):
            while 0 <= k < len(adjacent):
                found.add(adjacent[k])
                if adjacent[k] == 0:
                    break
                k = links[k]
        points[i] = tuple(sorted(found))
    return points


def _smaller(values: Sequence[int], reverse: bool) -> list[int]:
    """For each position, the nearest position before it (after it, with ``reverse``) holding a strictly smaller
    value; -1 (``len(values)``) when there is none. One pass with a stack."""
    out = [len(values) if reverse else -1] * len(values)
    stack: list[int] = []
    for k in (range(len(values) - 1, -1, -1) if reverse else range(len(values))):
        while stack and values[stack[-1]] >= values[k]:
            stack.pop()
        if stack:
            out[k] = stack[-1]
        stack.append(k)
    return out


def _common(a: str, b: str) -> int:
    """The length of the prefix ``a`` and ``b`` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _component(text: str, at: int) -> tuple[int, int]:
    """The path component holding ``text[at]``: from after one separator to the next (at most ``BACK_OFF`` either
    way). A number's component keeps the name before it, the list it indexes: ``layers.1``, not ``1`` (a Swin's
    attention calls read ``…1…s.0.attention`` while their rows kept the number alone)."""
    start = at
    while start > 0 and at - start < BACK_OFF and text[start - 1] not in SEPARATORS:
        start -= 1
    end = at + 1
    while end < len(text) and end - at < BACK_OFF and text[end] not in SEPARATORS:
        end += 1
    if text[start:end].isdigit() and start > 1 and text[start - 1] == ".":
        name = start - 1
        while name > 0 and start - name <= BACK_OFF and text[name - 1] not in SEPARATORS:
            name -= 1
        start = name if name < start - 1 else start
    return start, end


def _longest(make: Callable[[int], str], fits: Callable[[str], bool], high: int, hint: int | None = None) -> int:
    """The largest n in [0, high] with ``fits(make(n))`` (fits is monotone in n); -1 when none fits. A ``hint`` (the
    answer of a cheap estimate of ``fits``) is tried first with its neighbour: when it is right, two calls of ``fits``
    settle it instead of the binary search's six; when it is wrong, the search goes on in the part it ruled out, so
    the answer is the same either way."""
    low, best = 0, -1
    if hint is not None and high >= 0:
        hint = min(max(hint, 0), high)
        if fits(make(hint)):
            best, low = hint, hint + 1
            if low > high or not fits(make(low)):
                return best
            best, low = low, low + 1
        else:
            if hint == 0 or fits(make(hint - 1)):
                return hint - 1
            high = hint - 2
    while low <= high:
        mid = (low + high) // 2
        if fits(make(mid)):
            best, low = mid, mid + 1
        else:
            high = mid - 1
    return best


def _join(text: str, spans: Sequence[tuple[int, int]], lead: int, tail: int) -> str:
    """``text[:lead]``, each span, and ``text[-tail:]``, with an ellipsis for each gap between them."""
    out, pos = text[:lead], lead
    for a, b in spans:
        if b <= pos:
            continue
        out += (ELLIPSIS if a > pos else "") + text[max(a, pos):b]
        pos = b
    end = max(len(text) - tail, pos)
    return out + (ELLIPSIS if end > pos else "") + text[end:]


def unique_ends(texts: Sequence[str]) -> list[int]:
    """Per text, how many of its last characters no sibling ends with (the whole text where one ends as it does): a
    call row's FX name, which no other call has. Found as ``shared`` finds a first difference, on the texts read
    backwards: linear in the rows."""
    backwards = shared([t[::-1] for t in texts])
    return [min(len(t), max(points, default=-1) + 1) for t, points in zip(texts, backwards, strict=True)]


def distinct_elide(text: str, points: Sequence[int], fits: Callable[[str], bool],
                   guess: Callable[[str], bool] | None = None, end: int = 0) -> str:
    """``text`` shortened until it ``fits``, keeping what differs from its siblings: ``points`` are where it first
    differs from each (``shared``). The path component at each point is kept (in a narrow column only the
    characters around it; the earliest dropped first when they do not all fit, one at the start last: a search
    hit's kind), then as much of the end (the FX or op name) and of the start as fits: ``module…0.mlp.fc1``,
    ``…layers.1…attn › linear_1``. ``end``: how much of its end no sibling shares (``unique_ends``), kept before any
    point, so that a narrow column still tells rows apart by their ends (``…h.0…c_fc › addmm_2``, not ``…mlp…fc…``).
    ``guess``, a cheap estimate of ``fits`` (character widths added up), only says where to look first: the result
    is ``fits``' own."""
    if fits(text):
        return text
    at = [min(p, len(text) - 1) for p in points if text]
    components = [(p, *_component(text, p)) for p in at]
    # a point whose component ends the text (``add_68`` against ``add_69``) is kept as the end is: the room left goes
    # to the rest of the end before the start (``…self_attn › add_68``, not ``model.layers.3.self_at…68``)
    last = min((a for _p, a, b in components if b >= len(text)), default=len(text))
    end = max(end, len(text) - last) if fits(_join(text, [], 0, max(end, len(text) - last))) else end
    if end and not fits(_join(text, [], 0, end)):
        end = 0  # (too narrow for the end that tells it apart: the points alone, as far as they fit)
    spans: list[tuple[int, int]] = []
    for narrow in (False, True):  # whole components, else two characters either side of each point
        spans = [(max(a, p - 2), min(b, p + 2)) if narrow else (a, b) for p, a, b in components]
        spans = [(a, b) for a, b in spans if a < len(text) - end]  # (a point inside the kept end is kept with it)
        while spans and not fits(_join(text, spans, 0, end)):
            spans = spans[1:] if spans[0][0] > 0 or len(spans) == 1 else spans[:1] + spans[2:]
        if spans:
            break

    def longest(make: Callable[[int], str]) -> int:
        hint = _longest(make, guess, len(text)) if guess is not None else None
        return _longest(make, fits, len(text), hint)

    # (from the end kept: a shorter tail may read wider, its ellipsis in place of the characters that joined the last
    # span to it, so the search, which takes "fits" to fall as the tail grows, starts where it is known to fit)
    tail = end + max(longest(lambda n: _join(text, spans, 0, end + n)), 0)
    lead = longest(lambda n: _join(text, spans, n, tail))
    return _join(text, spans, max(lead, 0), tail)


class _Advances(dict[str, float]):
    """Each character's width in one font, measured on first use: their sum estimates a text's width (kerning and
    shaping aside) for ``distinct_elide``'s ``guess``. Measuring a row's text costs ~9 us in Qt, and a binary
    search over a row's lengths took 13 measures (597 for the 46 rows of an overload's calls shown at 100k)."""

    def __init__(self, metrics: QFontMetricsF) -> None:
        super().__init__()
        self._metrics = metrics

    def __missing__(self, char: str) -> float:
        width = self[char] = self._metrics.horizontalAdvance(char)
        return width


class DistinctDelegate(QStyledItemDelegate):
    """Draws column 0 of a view with ``distinct_elide`` against the row's siblings (the rows of its parent).
    What each row shares with its siblings is worked out once per parent and forgotten when the rows change."""

    def __init__(self, view: QAbstractItemView) -> None:
        super().__init__(view)
        self._view = view
        self._model: QObject | None = None
        self._shared: dict[tuple[int, ...], tuple[list[tuple[int, ...]], list[int]]] = {}
        self._elided: dict[tuple[str, tuple[int, ...], int, int, int, int], str] = {}
        self._advances: dict[str, _Advances] = {}  # per font (``QFont.key``): each character's width, once

    def _forget(self, *_args: object) -> None:
        self._shared.clear()
        self._elided.clear()

    def _watch(self, model: QAbstractItemModel) -> None:
        if model is self._model:
            return
        self._model, self._shared = model, {}
        for signal in (model.rowsInserted, model.rowsRemoved, model.modelReset, model.layoutChanged,
                       model.dataChanged, model.rowsMoved):
            signal.connect(self._forget)

    def _sibling_shared(self, index: QModelIndex | QPersistentModelIndex) -> tuple[tuple[int, ...], int]:
        """Where the row of ``index`` first differs from each sibling (``shared``), and how much of its end no sibling
        shares (``unique_ends``): once per parent."""
        model, parent, key = index.model(), index.parent(), []
        self._watch(model)
        walk = parent
        while walk.isValid():
            key.append(walk.row())
            walk = walk.parent()
        found = self._shared.get(tuple(key))
        if found is None or len(found[0]) != model.rowCount(parent):
            texts_of = getattr(model, "child_texts", None)  # a model may hand them over in one call
            texts = texts_of(parent) if texts_of is not None else None
            if texts is None:
                texts = [str(model.index(r, 0, parent).data() or "") for r in range(model.rowCount(parent))]
            found = self._shared[tuple(key)] = (shared(texts), unique_ends(texts))
        row = index.row()
        return (found[0][row], found[1][row]) if row < len(found[0]) else ((), 0)

    def initStyleOption(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> None:
        super().initStyleOption(option, index)
        if index.column() != 0 or not option.text:
            return
        width, metrics = self._text_width(option), option.fontMetrics

        def fits(s: str) -> bool:
            return metrics.horizontalAdvance(s) <= width - 1

        if not fits(option.text):  # the siblings are read only for a row that must be shortened
            points, end = self._sibling_shared(index)
            key = (option.text, points, end, width, metrics.averageCharWidth(), metrics.height())
            shown = self._elided.get(key)
            if shown is None:  # (a repaint, on hover or selection, draws the same rows again: 16 widths tried a row)
                if len(self._elided) > 4096:
                    self._elided.clear()
                advances = self._advances.get(option.font.key())
                if advances is None:
                    advances = self._advances[option.font.key()] = _Advances(QFontMetricsF(option.font))

                def guess(s: str) -> bool:
                    return sum(map(advances.__getitem__, s)) <= width - 1

                shown = self._elided[key] = distinct_elide(option.text, points, fits, guess, end)
            option.text = shown

    def _text_width(self, option: QStyleOptionViewItem) -> int:
        """The width the style draws a row's text in: its text rectangle less the margin Qt's common style keeps
        either side (``PM_FocusFrameHMargin`` + 1, ``viewItemDrawText`` in qcommonstyle.cpp), past which Qt elides
        the text again at its end, the very part this elision keeps (seen under Xvfb: ``…norm  (transformer.h.0.ln…``
        for ``…norm  (transformer.h.0.ln_1)``)."""
        style = option.widget.style() if option.widget is not None else self._view.style()
        rect = style.subElementRect(QStyle.SubElement.SE_ItemViewItemText, option, option.widget)
        return rect.width() - 2 * (style.pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, option.widget) + 1)

    def elided_text(self, index: QModelIndex) -> tuple[str, str]:
        """For ``index`` at the view's current column width: the text this delegate hands the style, and the text
        the style draws of it (eliding its end where it is still too wide; tests check that it never has to)."""
        option = QStyleOptionViewItem()
        option.initFrom(self._view.viewport())
        option.rect = self._view.visualRect(index)
        option.widget = self._view
        self.initStyleOption(option, index)
        return option.text, option.fontMetrics.elidedText(option.text, option.textElideMode, self._text_width(option))

    def shown_text(self, index: QModelIndex) -> str:
        """The text drawn for ``index`` at the view's current column width (what a reader sees)."""
        return self.elided_text(index)[1]


def use_distinct_elision(view: QAbstractItemView) -> DistinctDelegate:
    """Give ``view``'s first column the sibling-aware elision; returns the delegate (tests read ``shown_text``)."""
    delegate = DistinctDelegate(view)
    view.setItemDelegateForColumn(0, delegate)
    return delegate
