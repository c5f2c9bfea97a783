"""The HTML report: one self-contained file (inline CSS and SVG, no scripts, no external requests), rendered from
the Jinja2 templates ``report.html.j2`` and ``family.html.j2`` with autoescape (``inspector.report.templating``).

The threat is the model file: names, doc strings, metadata and values may hold markup, control and bidi characters
and URLs; every ``{{ }}`` of the templates goes through ``textsafe.html_text``. What this module passes as
``Markup`` is not escaped again: the CSS (constant), the diff section (rendered by ``diff_html`` from its own
autoescaped template) and inline SVG from ``inspector.render.layout.to_svg``, which XML-escapes every model string;
here the SVG's XML declaration and namespace (a URL) are dropped, which HTML5 does not need. A strict
Content-Security-Policy forbids scripts and every fetch even if something slipped through. Here the logic (which
values, which evidence, which rows); in the templates the markup.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from inspector.core.specialise.categories import Category, baked_text, value_text
from inspector.report.data import (
    BADGE_LABELS,
    STATUSES,
    BodyInfo,
    OverloadInfo,
    Report,
    Span,
    SpecialisedInfo,
    carried_count,
    flagged_reviews,
)
from inspector.report.diff_html import DIFF_CSS, diff_section_html
from inspector.report.templating import Markup, template_environment

__all__ = ["CSP", "inline_svg", "render_html"]

# Categories drawn on their colour; a parametric value is generic in the body and only outlined.
HIGHLIGHTED = [c for c in Category if c is not Category.PARAMETRIC]
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
MAX_METADATA = 500
MAX_DOC_CHARS = 20000
MAX_FAMILY_VALUES = 12
MAX_CALL_ROWS = 200

_SVG_HEAD = re.compile(r"\A\s*<\?xml[^>]*\?>\s*")
_SVG_NS = ' xmlns="http://www.w3.org/2000/svg"'


def render_html(report: Report, open_all: bool = False, printing: bool = False) -> str:
    """The report as one HTML document; ``open_all`` expands every collapsible section. ``printing`` makes the
    page Qt's printer lays out (``inspector.pdf``): its CSS subset (no variables, no compound selectors), category
    colours inline instead of links, every section open."""
    d = report.diff
    diff_html = ""
    if d is not None:
        diff_html = diff_section_html(d.diff, len(d.changes), heading="h3", printing=printing, reviewed=d.reviewed)
    return template_environment().get_template("report.html.j2").render(
        r=report, csp=Markup(CSP), open_attr=" open" if open_all or printing else "", printing=printing,
        small=len(report.families) <= 12,
        diff_css=Markup(DIFF_CSS if d is not None else ""), diff_html=Markup(diff_html),
        diff_other=(PurePath(d.other).name or d.other) if d is not None else "",
        flagged=flagged_reviews(report), carried=carried_count(report),
        body_view=body_view, overload_what=overload_what, short_id=_short_id,
        statuses=STATUSES, badge_labels=BADGE_LABELS, highlighted=HIGHLIGHTED, varies=Category.VARIES,
        lone_label=Category.LONE.label, max_metadata=MAX_METADATA, max_doc_chars=MAX_DOC_CHARS)


def _short_id(body_id: str) -> str:
    """``b0`` of ``f3-b0``."""
    return body_id.rsplit("-", 1)[1]


def overload_what(ov: OverloadInfo) -> str:
    """An overload's aten target, else its function key as ``domain.name:overload``."""
    if ov.target or ov.function is None:
        return ov.target or ""
    return ":".join(x for x in (".".join(x for x in ov.function[:2] if x), ov.function[2]) if x)


# --- what a body shows, worked out for the template ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Piece:
    """A span of a signature or body line as drawn: a muted parameter name, a highlighted value, or text."""

    kind: str  # "param" or "text"
    text: str
    spec: SpecialisedInfo | None = None
    anchor: str | None = None


@dataclass(frozen=True, slots=True)
class Evidence:
    """One line of a specialised value's evidence: a link, a shape note (``text``) or the per-call pointer."""

    link: Any = None
    shape: bool = False
    anchor: str | None = None
    value: str = ""
    text: str | None = None
    calls: int | None = None


@dataclass(frozen=True, slots=True)
class SpecRow:
    spec: SpecialisedInfo
    family: str  # "parametric", "varies", "lone" or "same"
    values: list[str]
    evidence: list[Evidence]


@dataclass(frozen=True, slots=True)
class Cell:
    text: str
    varies: bool


@dataclass(frozen=True, slots=True)
class PerCall:
    columns: list[SpecialisedInfo]
    rows: list[tuple[str, list[Cell | None]]]
    more: int


@dataclass(frozen=True, slots=True)
class BodyView:
    signature: list[Piece]
    lines: list[list[Piece]]
    rows: list[SpecRow]
    with_reviews: bool
    baked: list[str]
    per_call: PerCall | None
    svg: Markup | None


def body_view(b: BodyInfo) -> BodyView:
    specs = b.spec_by_id
    baked = sorted({s.baked_by for s in b.specialised if s.baked_by})
    return BodyView(
        signature=pieces(b.signature.spans, specs, b.id, signature=True) if b.signature is not None else [],
        lines=[pieces(line, specs, b.id) for line in b.lines],
        rows=[_spec_row(b, s) for s in b.specialised],
        with_reviews=any(s.review is not None for s in b.specialised),
        baked=[baked_text(f)[0].upper() + baked_text(f)[1:] for f in baked],
        per_call=_per_call(b),
        svg=Markup(inline_svg(b.svg)) if b.svg else None,
    )


def pieces(spans: Iterable[Span], specs: dict[str, SpecialisedInfo], bid: str, signature: bool = False) -> list[Piece]:
    """A line's spans as drawn: in a signature, a parameter's first span is its muted name and the next its value,
    anchored so that evidence can point at it."""
    out = []
    named: set[str] = set()
    for span in spans:
        spec = specs.get(span.spec) if span.spec else None
        anchor = None
        if signature and span.parameter:
            if span.parameter not in named:
                named.add(span.parameter)
                out.append(Piece("param", span.text))
                continue
            anchor = f"{bid}-a-{param_id(span.parameter)}"
        out.append(Piece("text", span.text, spec, anchor))
    return out


def _spec_row(b: BodyInfo, s: SpecialisedInfo) -> SpecRow:
    params = {a.parameter for a in b.signature.arguments} if b.signature else set()
    if s.kind == "parametric":
        family = "parametric"
    elif s.varies:
        family = "varies"
    else:
        family = "lone" if b.lone else "same"
    evidence = [Evidence(link=a, shape=a.rule == s.shape, value=value_text(a.value, 60),
                         anchor=f"{b.id}-a-{param_id(a.parameter)}" if a.parameter in params else None)
                for a in s.links]
    if s.shape and not any(a.rule == s.shape for a in s.links):
        evidence.insert(0, Evidence(text=s.shape))
    if s.call_sites:
        evidence.append(Evidence(calls=len(s.call_sites)))
    values = [value_text(v, 60) for v in s.family_values[:MAX_FAMILY_VALUES]] if family == "varies" else []
    return SpecRow(s, family, values, evidence)


def _per_call(b: BodyInfo) -> PerCall | None:
    """Parametric values as each call site passes them, one column per value; values unlike the first call's are
    marked as varying."""
    cols = [s for s in b.specialised if s.call_sites]
    if not cols:
        return None
    calls = list(dict.fromkeys(c.call for s in cols for c in s.call_sites))  # in order, once each
    values = [{c.call: c for c in s.call_sites} for s in cols]
    rows: list[tuple[str, list[Cell | None]]] = []
    for call in calls[:MAX_CALL_ROWS]:
        cells: list[Cell | None] = []
        for s, by_call in zip(cols, values, strict=True):
            c = by_call.get(call)
            cells.append(None if c is None else Cell(c.text, c.value != s.call_sites[0].value))
        rows.append((call, cells))
    return PerCall(cols, rows, max(len(calls) - MAX_CALL_ROWS, 0))


def inline_svg(svg: str) -> str:
    """A standalone SVG from ``to_svg`` made fit to sit inside HTML: no XML declaration, no namespace URL."""
    body = _SVG_HEAD.sub("", svg, count=1)
    body = body.replace(_SVG_NS, "", 1)
    return body.replace("://", "&#58;//")


def param_id(name: str | None) -> str:
    """A fragment-safe id for an aten parameter name (schema names are identifiers; anything else is hexed)."""
    text = name or ""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text):
        return text
    return "x" + text.encode("utf-8").hex()
