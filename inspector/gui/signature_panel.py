"""The signature panel: the aten signature with this call's values beside the ONNX body, specialised values
highlighted (hover for what varies and which aten arguments they came from)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import QUrl, Signal
from PySide6.QtGui import QCursor
from PySide6.QtWidgets import QTabWidget, QTextBrowser, QToolTip, QVBoxLayout, QWidget

from inspector.core.bodytext import Line, body_lines, signature_line
from inspector.core.categories import TEXT_COLOUR, Category, classify, explain, short_where
from inspector.core.signature import CallSignature
from inspector.core.specialise import BodyAnalysis, SpecialisedValue
from inspector.gui.text import esc, tooltip

MAX_CALLS_LISTED = 50


class SignaturePanel(QWidget):
    """Shows one body: an aten call, an aten overload's body, or a function overload."""

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
        self.clear()

    def clear(self, message: str = "Select an overload or an aten call.") -> None:
        self._specs = []
        self.view.setHtml(f"<p><i>{esc(message)}</i></p>")
        self.source.setHtml("<p><i>The torchlib implementation appears here for aten calls when torch and "
                            "onnxscript are installed.</i></p>")

    def show_body(self, title: str, analysis: BodyAnalysis, sig: CallSignature | None, family_note: str = "",
                  calls: Sequence[str] = (), lone: bool = False) -> None:
        """``calls`` names every call with exactly this body (aten calls, or a function's call sites); ``lone``: no
        other body of the family shares its template."""
        self._specs = []
        parts = [f"<h3>{esc(title)}</h3>"]
        if family_note:
            parts.append(f"<p>{esc(family_note)}</p>")
        if sig is not None:
            parts.append("<p><b>Aten signature</b> (this call's values bound to parameter names)</p>")
            parts.append(self._pre([signature_line(sig, analysis.specialised)]))
        n = len(calls) if calls else len(analysis.members)
        parts.append(f"<p><b>ONNX body</b> <small>fingerprint {esc(analysis.fingerprints.full[:12])}, "
                     f"template {esc(analysis.fingerprints.template[:12])}, {n} call{'s' if n != 1 else ''}"
                     "</small></p>")
        parts.append(self._pre(body_lines(analysis.body, analysis.specialised)))
        parts.append(self._spec_table(analysis.specialised, lone))
        if len(calls) > 1:
            shown = "".join(f"<li>{esc(c)}</li>" for c in calls[:MAX_CALLS_LISTED])
            more = f"<li>… {len(calls) - MAX_CALLS_LISTED} more</li>" if len(calls) > MAX_CALLS_LISTED else ""
            parts.append(f"<p><b>Identical calls ({len(calls)})</b> <small>same body, same values</small></p>"
                         f"<ul>{shown}{more}</ul>")
        parts.append(_legend())
        self.view.setHtml("".join(parts))

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
                    n = self._id(seg.spec)
                    html.append(f"<a href='spec:{n}' style='background-color:{classify(seg.spec).colour};"
                                f"color:{TEXT_COLOUR};text-decoration:none'>{esc(seg.text)}</a>")
                else:
                    html.append(esc(seg.text))
            out.append("".join(html))
        return "<pre style='white-space:pre-wrap'>" + "\n".join(out) + "</pre>"

    def _spec_table(self, specs: list[SpecialisedValue], lone: bool) -> str:
        if not specs:
            return "<p><i>No specialised values.</i></p>"
        rows = []
        for s in specs:
            n = self._id(s)
            lit = s.literal
            where = short_where(s)
            links = "; ".join(f"{a.parameter}: {a.rule}" for a in s.links) or "-"
            state = ("parametric" if classify(s) is Category.PARAMETRIC else "varies" if s.varies
                     else "no sibling to compare" if lone else "same in family")
            rows.append(f"<tr><td><a href='spec:{n}' style='background-color:{classify(s).colour};color:{TEXT_COLOUR}'>"
                        f"{esc(where)}</a></td><td>{esc(repr(lit.value))}</td><td>{esc(state)}</td>"
                        f"<td>{esc(links)}</td></tr>")
        return ("<p><b>Specialised values</b></p><table cellspacing='6'><tr><th align='left'>where</th>"
                "<th align='left'>value</th><th align='left'>in the family</th><th align='left'>aten arguments</th>"
                "</tr>" + "".join(rows) + "</table>")

    def _id(self, spec: SpecialisedValue) -> int:
        for k, s in enumerate(self._specs):
            if s is spec:
                return k
        self._specs.append(spec)
        return len(self._specs) - 1

    def _clicked(self, url: QUrl) -> None:
        text = url.toString()
        if text.startswith("spec:") and text[5:].isdigit() and int(text[5:]) < len(self._specs):
            self.value_clicked.emit(self._specs[int(text[5:])])

    def _hover(self, url: QUrl) -> None:
        text = url.toString()
        if text.startswith("spec:") and text[5:].isdigit() and int(text[5:]) < len(self._specs):
            QToolTip.showText(QCursor.pos(), tooltip(explain(self._specs[int(text[5:])])), self.view)
        else:
            QToolTip.hideText()


def _legend() -> str:
    keys = "".join(f"<span style='background-color:{c.colour};color:{TEXT_COLOUR}'>&nbsp;{esc(c.label)}&nbsp;</span> "
                   for c in Category)
    return f"<p><small>{keys}— hover a value for details</small></p>"
