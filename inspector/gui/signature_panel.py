"""The signature panel: the aten signature with this call's values beside the ONNX body, specialised values
highlighted (hover for what varies, which aten argument they came from and by what evidence), the torchlib function
that lowered the call, the values a TorchScript function receives from each call site, and the literals left out
as ONNX defaults (one click shows them)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QUrl, Signal
from PySide6.QtGui import QCursor
from PySide6.QtWidgets import QTabWidget, QTextBrowser, QToolTip, QVBoxLayout, QWidget

from inspector.core.aten.torchlib import torchlib_version
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
from inspector.gui.analysis import Selection
from inspector.gui.text import esc, tooltip

MAX_CALLS_LISTED = 50
MAX_VALUE_CHARS = 80  # of a value in a table cell (the tooltip has it whole)
LEFT_OUT_LINK = "leftout:toggle"
NOWRAP = "white-space:nowrap"  # where a value sits and its state read whole; the evidence wraps


class SignaturePanel(QWidget):
    """Shows one body: an aten call, an aten overload's body, or a function overload (folded or not)."""

    value_clicked = Signal(object)  # SpecialisedValue

    def __init__(self) -> None:
        super().__init__()
        self.tabs = QTabWidget()
        self.view = QTextBrowser()
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
        self._left_out_open = False
        self.clear()

    def clear(self, message: str = "Select an overload or an aten call.") -> None:
        self._specs = []
        self._shown = None
        self.view.setHtml(f"<p><i>{esc(message)}</i></p>")
        self.source.setHtml("<p><i>The torchlib implementation appears here for aten calls when torch and "
                            "onnxscript are installed.</i></p>")

    def show_selection(self, selection: Selection) -> None:
        """Show the body of ``selection``; the values left out start hidden."""
        self._left_out_open = False
        self._render(selection)

    def show_left_out(self, shown: bool = True) -> None:
        """Show (or hide) the literals of a lone body left out as ONNX defaults."""
        if self._shown is not None:
            self._left_out_open = shown
            self._render(self._shown)

    def _render(self, sel: Selection) -> None:
        self._specs = []
        self._shown = sel
        analysis = sel.analysis
        parts = [f"<h3>{esc(sel.title)}</h3>"]
        if sel.family_note:
            parts.append(f"<p>{esc(sel.family_note)}</p>")
        parts.append(_lowering(sel))
        if sel.signature is not None:
            parts.append("<p><b>Aten signature</b> (this call's values bound to parameter names)</p>")
            parts.append(self._pre([signature_line(sel.signature, analysis.specialised)]))
            if sel.signature.problem and sel.signature.schema is not None:
                parts.append(f"<p><i>{esc(sel.signature.problem)}</i></p>")
        n = len(sel.calls) if sel.calls else len(analysis.members)
        parts.append(f"<p><b>ONNX body</b> <small>fingerprint {esc(analysis.fingerprints.full[:12])}, "
                     f"template {esc(analysis.fingerprints.template[:12])}, {n} call{'s' if n != 1 else ''}"
                     "</small></p>")
        parts.append(self._pre(body_lines(analysis.body, analysis.specialised)))
        parts.append(self._spec_table(analysis.specialised, sel.lone))
        parts.append(self._per_call(analysis.specialised, sel.call))
        parts.append(self._left_out(analysis.left_out))
        if len(sel.calls) > 1:
            shown = "".join(f"<li>{'<b>' + esc(c) + '</b>' if c == sel.call else esc(c)}</li>"
                            for c in sel.calls[:MAX_CALLS_LISTED])
            more = f"<li>… {len(sel.calls) - MAX_CALLS_LISTED} more</li>" if len(sel.calls) > MAX_CALLS_LISTED else ""
            head = (f"Calls ({len(sel.calls)})</b> <small>same body; the values they pass differ (per call, above)"
                    if any(s.varies and s.call_values for s in analysis.specialised)  # TorchScript's eps per call
                    else f"Identical calls ({len(sel.calls)})</b> <small>same body, same values")
            parts.append(f"<p><b>{head}</small></p><ul>{shown}{more}</ul>")
        parts.append(_legend())
        self.view.setHtml("".join(parts))

    def shown(self) -> Selection | None:
        return self._shown

    def specialised(self) -> list[SpecialisedValue]:
        return list(self._specs)

    def show_source(self, target: str, functions: list[Any] | None) -> None:
        if functions is None:
            self.source.setHtml("<p><i>torch and onnxscript are not installed (pip install torch==2.13.0 "
                                "onnxscript) so the torchlib source cannot be shown.</i></p>")
            return
        if not functions:
            self.source.setHtml(f"<p>No torchlib function is registered for {esc(target)}.</p>")
            return
        parts = []
        for f in functions:
            kind = "trace_only: runs as Python at export time" if f.trace_only else "scripted ONNX function"
            parts.append(f"<h3>{esc(f.name)}</h3><p><i>{esc(kind)}</i></p><pre>{esc(f.source)}</pre>")
        self.source.setHtml("".join(parts))

    # rendering ---------------------------------------------------------------------------------------------
    def _pre(self, lines: list[Line]) -> str:
        out = []
        for line in lines:
            html = []
            for seg in line:
                if seg.spec is not None:
                    html.append(self._mark(seg.spec, seg.text))
                else:
                    html.append(esc(seg.text))
            out.append("".join(html))
        return "<pre style='white-space:pre-wrap'>" + "\n".join(out) + "</pre>"

    def _mark(self, spec: SpecialisedValue, text: str) -> str:
        """``text`` highlighted in ``spec``'s colour, linked to it (hover explains it, a click reviews it)."""
        return (f"<a href='spec:{self._id(spec)}' style='background-color:{classify(spec).colour};"
                f"color:{TEXT_COLOUR};text-decoration:none'>{esc(text)}</a>")

    def _spec_table(self, specs: list[SpecialisedValue], lone: bool) -> str:
        if not specs:
            return "<p><i>No specialised values.</i></p>"
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
            cells = (self._mark(s, short_where(s)), esc(value), esc(state), "<br>".join(map(esc, evidence)) or "-")
            rows.append(f"<tr><td style='{NOWRAP}'>{cells[0]}</td><td>{cells[1]}</td>"
                        f"<td style='{NOWRAP}'>{cells[2]}</td><td>{cells[3]}</td></tr>")
        baked = {s.baked_by for s in specs if s.baked_by}
        note = "".join(f"<p><small>{esc(baked_text(b)[0].upper() + baked_text(b)[1:])}.</small></p>"
                       for b in sorted(baked))
        return ("<p><b>Specialised values</b></p><table cellspacing='6'><tr><th align='left'>where</th>"
                "<th align='left'>value</th><th align='left'>in the family</th><th align='left'>evidence</th>"
                "</tr>" + "".join(rows) + "</table>" + note)

    def _per_call(self, specs: list[SpecialisedValue], current: str | None) -> str:
        """Parametric values as each call site passes them (one column per value), differing values marked."""
        cols = [s for s in specs if s.call_values]
        if not cols:
            return ""
        calls = list(dict.fromkeys(c for s in cols for c, _v in s.call_values))  # in order, once each
        head = "".join(f"<th align='left'>{self._mark(s, f'@{s.literal.ref}')} <small>({esc(short_where(s))})"
                       "</small></th>" for s in cols)
        rows = []
        by_call = [dict(s.call_values) for s in cols]
        for call in calls[:MAX_CALLS_LISTED]:
            cells = []
            for s, values in zip(cols, by_call, strict=True):
                if call not in values:
                    cells.append("<td>-</td>")
                    continue
                text = esc(value_text(values[call], MAX_VALUE_CHARS))
                first = s.call_values[0][1]
                if values[call] != first:  # differs from the first call's: varies, like an overload difference
                    text = (f"<span style='background-color:{Category.VARIES.colour};color:{TEXT_COLOUR}'>"
                            f"{text}</span>")
                cells.append(f"<td>{text}</td>")
            name = f"<b>{esc(call)}</b>" if call == current else esc(call)
            rows.append(f"<tr><td>{name}</td>{''.join(cells)}</tr>")
        more = (f"<p><small>… {len(calls) - MAX_CALLS_LISTED} more calls</small></p>"
                if len(calls) > MAX_CALLS_LISTED else "")
        return ("<p><b>Per call site</b> <small>the values each call passes to the function's attributes</small></p>"
                "<table cellspacing='6'><tr><th align='left'>call</th>" + head + "</tr>" + "".join(rows)
                + "</table>" + more)

    def _left_out(self, left_out: list[SpecialisedValue]) -> str:
        if not left_out:
            return ""
        n = len(left_out)
        what = f"{n} attribute{'s' if n != 1 else ''} equal to {'their' if n != 1 else 'its'} ONNX default"
        if not self._left_out_open:
            return (f"<p><small>Left out: {what} (neither varying nor linked). "
                    f"<a href='{LEFT_OUT_LINK}'>Show them</a></small></p>")
        rows = "".join(f"<tr><td>{esc(short_where(s))}</td><td>{esc(value_text(s.literal.value, MAX_VALUE_CHARS))}"
                       "</td></tr>" for s in left_out)
        return (f"<p><small>Left out: {what} (neither varying nor linked). <a href='{LEFT_OUT_LINK}'>Hide them"
                f"</a></small></p><table cellspacing='6'><tr><th align='left'>where</th><th align='left'>value</th>"
                f"</tr>{rows}</table>")

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

    def _hover(self, url: QUrl) -> None:
        text = url.toString()
        if text.startswith("spec:") and text[5:].isdigit() and int(text[5:]) < len(self._specs):
            QToolTip.showText(QCursor.pos(), tooltip(explain(self._specs[int(text[5:])])), self.view)
        else:
            QToolTip.hideText()


def _lowering(sel: Selection) -> str:
    """Which torchlib function lowered the call: ``aten::transpose.int → torchlib aten_transpose, trace_only``."""
    entry = sel.torchlib
    if sel.target is None:
        return ""
    if entry is None:
        return f"<p>{esc(sel.target)} → <i>no torchlib function in the catalogue</i></p>"
    kind = "trace_only" if entry.trace_only else "script"
    source = esc(entry.source) + (f", {esc(torchlib_version())}" if torchlib_version() else "")
    out = (f"<p>{esc(sel.target)} → torchlib <code>{esc(entry.function)}</code>, {kind} "
           f"<small>({source})</small>")
    if sel.rewritten:
        out += (f"<br><small>The optimizer's rewriter changed these nodes (rule {esc(', '.join(sel.rewritten))}), so "
                "their values are not attributed to torchlib's code.</small>")
    return out + "</p>"


def _legend() -> str:
    keys = "".join(f"<span style='background-color:{c.colour};color:{TEXT_COLOUR}'>&nbsp;{esc(c.label)}&nbsp;</span> "
                   for c in Category)
    return f"<p><small>{keys}— hover a value for details</small></p>"
