"""The signature panel: the aten signature with this call's values beside the ONNX body, specialised values
highlighted (hover for what varies, which aten argument they came from and by what evidence), the torchlib function
that lowered the call, the values a TorchScript function receives from each call site, and the literals left out
as ONNX defaults (one click shows them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from PySide6.QtCore import QUrl, Signal
from PySide6.QtGui import QCursor, QTextOption
from PySide6.QtWidgets import QTabWidget, QTextBrowser, QToolTip, QVBoxLayout, QWidget

from inspector.core.aten.torchlib import torchlib_for, torchlib_version
from inspector.core.model.calls import RULED_OUT
from inspector.core.review.store import Review
from inspector.core.specialise.bodytext import Line, body_lines, signature_line
from inspector.core.specialise.categories import (
    TEXT_COLOUR,
    Category,
    baked_text,
    classify,
    explain,
    link_text,
    short_where,
    value_text,
)
from inspector.core.specialise.specialiser import SpecialisedValue
from inspector.core.util.units import plural
from inspector.gui.analysis import Selection
from inspector.gui.text import BR, Rich, pre, rich, tag, tooltip
from inspector.gui.theme import status_text

MAX_CALLS_LISTED = 50
MAX_VALUE_CHARS = 80  # of a value in a table cell (the tooltip has it whole)
LEFT_OUT_LINK = "leftout:toggle"
NOWRAP = "white-space:nowrap"  # where a value sits, and each line of a value, read whole; the others wrap
VALUE_LINE_CHARS = 20  # a value's line in the table: at a 1024 px window the panel is 347 px and its where column
# ~110 px, so a longer line would push the state and evidence columns off the panel


class SignaturePanel(QWidget):
    """Shows one body: an aten call, an aten overload's body, or a function overload (folded or not)."""

    value_clicked = Signal(object)  # SpecialisedValue
    call_requested = Signal(object)  # AtenCall: the first call of another body of the target shown

    def __init__(self) -> None:
        super().__init__()
        self.tabs = QTabWidget()
        self.view = QTextBrowser()
        # (by default a word wider than its table column breaks anywhere, "unreview ed": words stay whole, and a
        # table wider than the panel scrolls sideways)
        self.view.setWordWrapMode(QTextOption.WrapMode.WordWrap)
        self.view.setOpenLinks(False)
        self.view.highlighted.connect(self._hover)
        self.view.anchorClicked.connect(self._clicked)
        self.source = QTextBrowser()
        self.tabs.addTab(self.view, "Signature && body")
        self.tabs.addTab(self.source, "torchlib source")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.tabs)
        self._specs: list[SpecialisedValue] = []
        self._shown: Selection | None = None
        self._reviews: Mapping[int, Review] = {}
        self._left_out_open = False
        self.clear()

    def clear(self, message: str = "Select an overload or an aten call.") -> None:
        self._specs = []
        self._shown = None
        self.view.setHtml(tag("p", tag("i", message)))
        self.source.setHtml(tag("p", tag("i", "The torchlib implementation appears here for aten calls when torch "
                                              "and onnxscript are installed.")))

    def show_selection(self, selection: Selection, reviews: Mapping[int, Review] | None = None) -> None:
        """Show the body of ``selection``; the values left out start hidden. ``reviews``: each specialised value's
        review, by ``id`` of the value (``Session.value_reviews``), said beside it."""
        self._left_out_open = False
        self._reviews = reviews or {}
        self._render(selection)

    def set_reviews(self, reviews: Mapping[int, Review]) -> None:
        """The values' reviews changed: say them again, where the view was scrolled to (a review marked from the
        keyboard keeps the value in sight)."""
        if self._shown is not None and reviews != self._reviews:
            self._reviews = reviews
            bar = self.view.verticalScrollBar()
            at = bar.value()
            self._render(self._shown)
            bar.setValue(at)

    def show_left_out(self, shown: bool = True) -> None:
        """Show (or hide) the literals of a lone body left out as ONNX defaults."""
        if self._shown is not None:
            self._left_out_open = shown
            self._render(self._shown)

    def _render(self, sel: Selection) -> None:
        self._specs = []
        self._shown = sel
        analysis = sel.analysis
        parts = [tag("h3", sel.title)]
        if sel.family_note:
            parts.append(tag("p", sel.family_note))
        parts.append(_bodies(sel))
        parts.append(_recognised(sel))
        parts.append(_lowering(sel))
        if sel.signature is not None:
            parts.append(tag("p", tag("b", "Aten signature"), " (this call's values bound to parameter names)"))
            parts.append(self._pre([signature_line(sel.signature, analysis.specialised)]))
            if sel.signature.problem and sel.signature.schema is not None:
                parts.append(tag("p", tag("i", sel.signature.problem)))
        n = len(sel.calls) if sel.calls else len(analysis.members)
        prints = analysis.fingerprints
        parts.append(tag("p", tag("b", "ONNX body"), " ", tag("small", f"fingerprint {prints.full[:12]}, template "
                                                                       f"{prints.template[:12]}, "
                                                                       f"{plural(n, 'call')}")))
        # this call's own names where one is selected (the values and slots are the body's, as are its highlights)
        parts.append(self._pre(body_lines(sel.own_body or analysis.body, analysis.specialised)))
        parts.append(self._spec_table(analysis.specialised, sel.lone))
        parts.append(self._per_call(analysis.specialised, sel.call))
        parts.append(self._left_out(analysis.left_out))
        if len(sel.calls) > 1:
            shown = [tag("li", tag("b", c) if c == sel.call else c) for c in sel.calls[:MAX_CALLS_LISTED]]
            more = [tag("li", f"… {len(sel.calls) - MAX_CALLS_LISTED} more")] if len(sel.calls) > MAX_CALLS_LISTED \
                else []
            if any(s.varies and s.call_values for s in analysis.specialised):  # TorchScript's eps per call
                head = (tag("b", f"Calls ({len(sel.calls)})"), " ",
                        tag("small", "same body; the values they pass differ (per call, above)"))
            else:
                head = (tag("b", f"Identical calls ({len(sel.calls)})"), " ", tag("small", "same body, same values"))
            parts += [tag("p", *head), tag("ul", *shown, *more)]
        parts.append(_legend())
        self.view.setHtml(rich(*parts))

    def shown(self) -> Selection | None:
        return self._shown

    def specialised(self) -> list[SpecialisedValue]:
        return list(self._specs)

    def show_source(self, target: str, functions: list[Any] | None) -> None:
        if functions is None:
            self.source.setHtml(tag("p", tag("i", "torch and onnxscript are not installed (pip install torch==2.13.0 "
                                                  "onnxscript) so the torchlib source cannot be shown.")))
            return
        if not functions:
            self.source.setHtml(tag("p", f"No torchlib function is registered for {target}."))
            return
        parts = []
        for f in functions:
            kind = "trace_only: runs as Python at export time" if f.trace_only else "scripted ONNX function"
            parts += [tag("h3", f.name), tag("p", tag("i", kind)), tag("pre", f.source)]
        self.source.setHtml(rich(*parts))

    # rendering ---------------------------------------------------------------------------------------------
    def _pre(self, lines: list[Line]) -> Rich:
        out = [rich(*(self._mark(seg.spec, seg.text) if seg.spec is not None else seg.text for seg in line))
               for line in lines]
        return pre(*(rich("\n" if k else "", line) for k, line in enumerate(out)))

    def _mark(self, spec: SpecialisedValue, text: str) -> Rich:
        """``text`` highlighted in ``spec``'s colour, linked to it (hover explains it, a click reviews it)."""
        return tag("a", text, href=f"spec:{self._id(spec)}",
                   style=f"background-color:{classify(spec).colour};color:{TEXT_COLOUR};text-decoration:none")

    def _spec_table(self, specs: list[SpecialisedValue], lone: bool) -> Rich:
        if not specs:
            return tag("p", tag("i", "No specialised values."))
        rows = []
        for s in specs:
            lit = s.literal
            category = classify(s)
            if category is Category.PARAMETRIC:
                value = f"@{lit.ref}"
                state = "varies between calls" if s.varies else "parametric"
                evidence = [f"each call passes its own value ({len(s.call_values)} calls, below)"]
            else:
                value = value_text(lit.value, MAX_VALUE_CHARS)
                state = "varies" if s.varies else "no sibling to compare" if lone else "same in family"
                # the default SDPA scale's link is its shape explanation: said once, as both
                evidence = [("shape-specialised: " if a.rule == s.shape else "") + link_text(a, short_where(s))
                            for a in s.links]
                if s.shape and not any(a.rule == s.shape for a in s.links):
                    evidence.insert(0, f"shape-specialised: {s.shape}")
            lines = rich(*(rich(BR if k else "", e) for k, e in enumerate(evidence))) if evidence else "none"
            review = self._reviews.get(id(s)) if self._reviews else None
            said = _review_line(review) if self._reviews else ""
            rows.append(tag("tr", tag("td", self._mark(s, short_where(s)), said, style=NOWRAP), _value_cell(value),
                            tag("td", state)))
            # the evidence and the note on rows of their own, the table's width: in a column of their own, a 440 px
            # panel (a 1366 px window) broke their words anywhere ("LayerNormalization.e / psilon")
            rows.append(tag("tr", tag("td", tag("small", "evidence: ", lines), colspan=3)))
            if review is not None and review.note:
                rows.append(tag("tr", tag("td", tag("small", "note: ", review.note), colspan=3)))
        baked = {s.baked_by for s in specs if s.baked_by}
        notes = [tag("p", tag("small", f"{baked_text(b)[0].upper() + baked_text(b)[1:]}.")) for b in sorted(baked)]
        titles = ("where" + (" (review)" if self._reviews else ""), "value", "in the family")
        head = tag("tr", *(tag("th", h, align="left", style=NOWRAP) for h in titles))
        return rich(tag("p", tag("b", "Specialised values")), tag("table", head, *rows, cellspacing=6), *notes)

    def _per_call(self, specs: list[SpecialisedValue], current: str | None) -> Rich:
        """Parametric values as each call site passes them (one column per value), differing values marked."""
        cols = [s for s in specs if s.call_values]
        if not cols:
            return Rich()
        calls = list(dict.fromkeys(c for s in cols for c, _v in s.call_values))  # in order, once each
        head = [tag("th", self._mark(s, f"@{s.literal.ref}"), " ", tag("small", f"({short_where(s)})"), align="left")
                for s in cols]
        rows = []
        by_call = [dict(s.call_values) for s in cols]
        for call in calls[:MAX_CALLS_LISTED]:
            cells = []
            for s, values in zip(cols, by_call, strict=True):
                if call not in values:
                    cells.append(tag("td", "-"))
                    continue
                text: Rich | str = value_text(values[call], MAX_VALUE_CHARS)
                if values[call] != s.call_values[0][1]:  # differs from the first call's: varies, like an overload
                    text = tag("span", text, style=f"background-color:{Category.VARIES.colour};color:{TEXT_COLOUR}")
                cells.append(tag("td", text))
            rows.append(tag("tr", tag("td", tag("b", call) if call == current else call), *cells))
        more = (tag("p", tag("small", f"… {len(calls) - MAX_CALLS_LISTED} more calls"))
                if len(calls) > MAX_CALLS_LISTED else "")
        return rich(tag("p", tag("b", "Per call site"), " ",
                        tag("small", "the values each call passes to the function's attributes")),
                    tag("table", tag("tr", tag("th", "call", align="left"), *head), *rows, cellspacing=6), more)

    def _left_out(self, left_out: list[SpecialisedValue]) -> Rich:
        if not left_out:
            return Rich()
        n = len(left_out)
        what = (f"Left out: {plural(n, 'attribute')} equal to {'their' if n != 1 else 'its'} ONNX "
                "default (neither varying nor linked). ")
        if not self._left_out_open:
            return tag("p", tag("small", what, tag("a", "Show them", href=LEFT_OUT_LINK)))
        rows = [tag("tr", tag("td", short_where(s)), tag("td", value_text(s.literal.value, MAX_VALUE_CHARS)))
                for s in left_out]
        return rich(tag("p", tag("small", what, tag("a", "Hide them", href=LEFT_OUT_LINK))),
                    tag("table", tag("tr", tag("th", "where", align="left"), tag("th", "value", align="left")),
                        *rows, cellspacing=6))

    def _id(self, spec: SpecialisedValue) -> int:
        for k, s in enumerate(self._specs):
            if s is spec:
                return k
        self._specs.append(spec)
        return len(self._specs) - 1

    def _clicked(self, url: QUrl) -> None:
        text = url.toString()
        if text == LEFT_OUT_LINK:
            self.show_left_out(not self._left_out_open)
        elif text.startswith("spec:") and text[5:].isdigit() and int(text[5:]) < len(self._specs):
            self.value_clicked.emit(self._specs[int(text[5:])])
        elif text.startswith("body:") and text[5:].isdigit() and self._shown is not None \
                and int(text[5:]) < len(self._shown.bodies):
            self.call_requested.emit(self._shown.bodies[int(text[5:])][0])

    def _hover(self, url: QUrl) -> None:
        text = url.toString()
        if text.startswith("spec:") and text[5:].isdigit() and int(text[5:]) < len(self._specs):
            QToolTip.showText(QCursor.pos(), tooltip(explain(self._specs[int(text[5:])])), self.view)
        else:
            QToolTip.hideText()


def _lowering(sel: Selection) -> Rich:
    """Which torchlib function lowered the call: ``aten::transpose.int → torchlib aten_transpose, trace_only``."""
    entry = sel.torchlib
    if sel.target is None:
        return Rich()
    if entry is None and len(sel.candidates) > 1:  # an ambiguous body: each candidate's lowering
        return tag("p", *(rich(BR if k else "", _candidate_lowering(c)) for k, c in enumerate(sel.candidates)))
    if entry is None:
        return tag("p", f"{sel.target} → ", tag("i", "no torchlib function in the catalogue"))
    kind = "trace_only" if entry.trace_only else "script"
    source = entry.source + (f", {torchlib_version()}" if torchlib_version() else "")
    rules = ", ".join(sel.rewritten)
    rewritten = rich(BR, tag("small", f"The optimizer's rewriter changed these nodes (rule {rules}), so their "
                                      "values are not attributed to torchlib's code.")) if sel.rewritten else ""
    return tag("p", f"{sel.target} → torchlib ", tag("code", entry.function), f", {kind} ",
               tag("small", f"({source})"), rewritten)


def _candidate_lowering(target: str) -> Rich:
    """``aten::conv2d → torchlib aten_conv2d, trace_only``: one candidate of an ambiguous body."""
    entry = next((e for e in torchlib_for(target) if not e.complex), None)
    if entry is None:
        return rich(f"{target} → ", tag("i", "no torchlib function in the catalogue"))
    kind = "trace_only" if entry.trace_only else "script"
    return rich(f"{target} → torchlib ", tag("code", entry.function), f", {kind}")


def _bodies(sel: Selection) -> Rich:
    """The target's bodies where it has several, the one shown in bold and each other a link to its first call:
    ``Its bodies: 6 calls, 2 nodes · 9 calls, 1 node`` (the family's note counted them, and the tree was the only way
    to the other one)."""
    if not sel.bodies:
        return Rich()
    shown = sel.analysis.members[0] if sel.analysis.members else None
    items = []
    for k, (first, calls, nodes) in enumerate(sel.bodies):
        text = f"{plural(calls, 'call')}, {plural(nodes, 'node')}"
        items.append(tag("b", text) if first is shown else tag("a", text, href=f"body:{k}"))
    return tag("p", tag("small", f"Bodies of {sel.target}: ", *(rich(" · " if k else "", item)
                                                                 for k, item in enumerate(items))))


def _recognised(sel: Selection) -> Rich:
    """That the call was recognised by body template (its nodes carry no fx metadata), and by which; the
    candidates of an ambiguous body. Template and target names are escaped as any text is (``tag``)."""
    if not sel.recognised:
        return Rich()
    n = len(sel.recognised)
    names = rich(*(rich(", " if k else "", tag("code", t)) for k, t in enumerate(sel.recognised)))
    ambiguous = (rich(BR, "Ambiguous body, candidates: ", ", ".join(sel.candidates))
                 if len(sel.candidates) > 1 else "")
    named = (rich(BR, "Also fits ", ", ".join(sel.ruled_out), ": ", RULED_OUT)
             if sel.ruled_out else "")
    return tag("p", tag("small", f"Recognised by template{'s' if n != 1 else ''} ", names,
                        " (its nodes carry no fx metadata)", ambiguous, named))


def _review_line(review: Review | None) -> Rich:
    """A value's review, on a line under where it sits, in its status's colour (as the Review list draws it); its
    note goes on a row of its own. (A column of its own pushed the evidence past a 1366 px window's panel: 440 px
    wide, the five columns' words broke anywhere, "unreview / ed", or, kept whole, scrolled sideways.)"""
    if review is None:
        return Rich()
    return rich(BR, tag("small", status_text(review.status)))


def _value_cell(value: str) -> Rich:
    """A value's table cell that never breaks inside a number: squeezed, Qt's rich text cuts a cell's words
    anywhere (`-3.4 / 028 / 235 / e+3 / 8` at a 1024 px window), so the cell does not wrap, and a long value is
    broken here, between its list items, into lines of at most ``VALUE_LINE_CHARS`` (one item longer than that
    has a line of its own)."""
    lines: list[str] = []
    for piece in value.split(", "):
        if lines and len(lines[-1]) + 2 + len(piece) <= VALUE_LINE_CHARS:
            lines[-1] += ", " + piece
        else:
            if lines:
                lines[-1] += ","
            lines.append(piece)
    return tag("td", *(rich(BR if k else "", line) for k, line in enumerate(lines)), style=NOWRAP)


def _legend() -> Rich:
    keys = [rich(tag("span", Rich("&nbsp;"), c.label, Rich("&nbsp;"),
                     style=f"background-color:{c.colour};color:{TEXT_COLOUR}"), " ") for c in Category]
    return tag("p", tag("small", *keys, "— hover a value for details"))
