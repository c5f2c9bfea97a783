"""The HTML report: one self-contained file (inline CSS and SVG, no scripts, no external requests).

Every string that comes from the model (names, doc strings, metadata, values, notes) goes through ``esc``:
control and bidi characters made visible, then ``html.escape(quote=True)``; ``://`` is written ``&#58;//``
so that the file holds no URL at all. Inline SVGs come from ``inspector.render.layout.to_svg``, which
XML-escapes every model string; here the XML declaration and namespace (a URL) are dropped, which HTML5 does
not need. A strict Content-Security-Policy forbids scripts and every fetch even if something slipped through.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import PurePath

from inspector.core.specialise.categories import Category, baked_text, value_text
from inspector.core.util.textsafe import html_text, one_line
from inspector.core.util.units import human_size
from inspector.report.data import (
    STATUSES,
    BodyInfo,
    FamilyInfo,
    Report,
    ReviewInfo,
    Span,
    SpecialisedInfo,
)
from inspector.report.diff_html import DIFF_CSS, changes_html, summary_html

# Categories drawn on their colour; a parametric value is generic in the body and only outlined.
_HIGHLIGHTED = [c for c in Category if c is not Category.PARAMETRIC]
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
MAX_METADATA = 500
MAX_DOC_CHARS = 20000

CSS = """
:root { color-scheme: light dark; --bg: #ffffff; --fg: #1f2328; --muted: #59636e; --border: #d1d9e0;
  --panel: #f6f8fa; --link: #0969da; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #0d1117; --fg: #e6edf3; --muted: #9198a1; --border: #3d444d; --panel: #151b23; --link: #4493f8; }
}
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1280px; padding: 1em 2em 3em; background: var(--bg); color: var(--fg);
  font: 14px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
a { color: var(--link); }
h1 { font-size: 1.6em; margin-bottom: .2em; } h2 { border-bottom: 1px solid var(--border); padding-bottom: .2em; }
h2, h3, h4 { margin-top: 1.2em; }
.muted, .generator { color: var(--muted); }
table { border-collapse: collapse; margin: .5em 0 1em; }
th, td { border: 1px solid var(--border); padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: var(--panel); }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.wrap { max-width: 60em; overflow-wrap: anywhere; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace;
  font-size: 12.5px; }
pre { background: var(--panel); border: 1px solid var(--border); border-radius: 6px; padding: .6em .8em;
  white-space: pre-wrap; overflow-wrap: anywhere; }
details { border: 1px solid var(--border); border-radius: 6px; padding: .2em .9em; margin: .6em 0; }
details[open] { padding-bottom: .6em; }
summary { cursor: pointer; padding: .2em 0; }
details.family > summary { font-size: 1.1em; font-weight: 600; }
nav#toc { background: var(--panel); border: 1px solid var(--border); border-radius: 6px; padding: .4em 1.2em; }
nav#toc ol { margin: .2em 0; padding-left: 1.4em; } nav#toc li { margin: .1em 0; }
.spec { color: #000000; border-radius: 3px; padding: 0 2px; text-decoration: none; }
""" + " ".join(f".spec.{c} {{ background: {c.colour}; }}" for c in _HIGHLIGHTED) + """
.spec.parametric { color: inherit; border: 1px dashed var(--muted); }
a.spec:hover { outline: 2px solid var(--link); }
.param { color: var(--muted); }
.badge { display: inline-block; border-radius: 1em; padding: 0 .6em; font-size: 12px; font-weight: 600;
  color: #ffffff; vertical-align: middle; white-space: nowrap; }
.badge.unreviewed { background: #6e7781; } .badge.ok { background: #1a7f37; }
.badge.suspicious { background: #9a6700; } .badge.wrong { background: #cf222e; }
.badge.count { background: transparent; color: var(--muted); border: 1px solid var(--border); }
.sev-error { color: #cf222e; font-weight: 600; } .sev-warning { color: #9a6700; font-weight: 600; }
.note { border-left: 3px solid var(--border); padding-left: .8em; margin: .4em 0; }
.graph { overflow: auto; max-height: 720px; background: #ffffff; border: 1px solid var(--border); border-radius: 6px;
  margin: .5em 0; }
.graph svg { display: block; max-width: none; }
.legend span { margin-right: 1em; }
"""

_SVG_HEAD = re.compile(r"\A\s*<\?xml[^>]*\?>\s*")
_SVG_NS = ' xmlns="http://www.w3.org/2000/svg"'


def esc(text: object) -> str:
    """Model text as HTML text or attribute value: nothing in it is ever markup or a URL."""
    return html_text(text, keep_newlines=True)


def esc_line(text: object, width: int = 0) -> str:
    return esc(one_line(str(text), width))


def render_html(report: Report, open_all: bool = False) -> str:
    """The report as one HTML document; ``open_all`` expands every collapsible section (for printing)."""
    w = _Writer(report, open_all)
    return w.document()


class _Writer:
    def __init__(self, report: Report, open_all: bool) -> None:
        self.r = report
        self.open_attr = " open" if open_all else ""
        self.small = len(report.families) <= 12

    def document(self) -> str:
        r = self.r
        parts = [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
            '<meta name="referrer" content="no-referrer">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{esc(r.title)}</title>",
            f"<style>{CSS}{DIFF_CSS if self.r.diff is not None else ''}</style>",
            "</head>",
            "<body>",
            "<header>",
            f"<h1>{esc(r.title)}</h1>",
            f'<p class="generator">Generated by {esc(r.generator)}. Model strings are shown as text; specialised '
            "values are highlighted as in the app.</p>",
            "</header>",
            self.toc(),
            self.model(),
            self.reviews(),
            self.findings(),
        ]
        if r.diff is not None:
            parts.append(self.diff())
        parts += [self.families(), self.op_histogram(), self.notes(), self.legend(), "</body>", "</html>"]
        return "\n".join(p for p in parts if p) + "\n"

    # --- sections ---------------------------------------------------------------------------------------------

    def toc(self) -> str:
        r = self.r
        items = [
            '<li><a href="#model">Model</a></li>',
            '<li><a href="#reviews">Reviews</a></li>',
            f'<li><a href="#findings">Findings ({len(r.findings) + r.findings_omitted})</a></li>',
        ]
        if r.diff is not None:
            items.append(f'<li><a href="#diff">Changes ({len(r.diff.changes) + r.diff.changes_omitted})</a></li>')
        fams = "".join(
            f'<li><a href="#{f.id}">{esc_line(f.label, 120)}</a> <span class="muted">{self._fam_counts(f)}</span>'
            "</li>"
            for f in r.families if f.detailed
        )
        items.append(f'<li><a href="#families">Families ({len(r.families)})</a>'
                     + (f"<ol>{fams}</ol>" if fams else "") + "</li>")
        items.append('<li><a href="#ops">Operators</a></li>')
        if r.notes:
            items.append('<li><a href="#notes">Notes</a></li>')
        return '<nav id="toc"><h2>Contents</h2><ol>' + "".join(items) + "</ol></nav>"

    def model(self) -> str:
        m = self.r.model
        rows = [
            ("File", f"{esc(m.file_name)} <span class='muted'>({esc(m.facts.format)}, "
                     f"{human_size(m.facts.file_size)})</span>"),
            ("IR version", str(m.facts.ir_version)),
            ("Opsets", ", ".join(f"{esc(d or 'ai.onnx')}={v}" for d, v in m.opsets.items()) or "-"),
            ("Producer", f"{esc(m.facts.producer_name) or '-'} {esc(m.facts.producer_version)}"),
            ("Domain / model version", f"{esc(m.facts.domain) or '-'} / {m.facts.model_version}"),
            ("Graph", esc(m.facts.graph_name) or "-"),
            ("Nodes", f"{m.facts.main_nodes:,} in the main graph, {m.facts.total_nodes:,} in all"),
            ("Functions", f"{m.facts.function_count:,}"),
            ("Parameters", f"{m.parameters.count:,} in {m.facts.initializer_count:,} initializers, "
                           f"{human_size(m.parameters.bytes)}"
             + (f" ({human_size(m.parameters.external_bytes)} as external data, not read)"
                if m.parameters.external_bytes else "")),
            ("Inputs", _names(m.inputs)),
            ("Outputs", _names(m.facts.outputs)),
        ]
        out = ['<section id="model"><h2>Model</h2><table class="facts">']
        out += [f"<tr><th>{k}</th><td class='wrap'>{v}</td></tr>" for k, v in rows]
        out.append("</table>")
        if m.facts.metadata:
            items = list(m.facts.metadata.items())
            rows_md = "".join(f"<tr><td class='wrap mono'>{esc_line(k, 300)}</td><td class='wrap'>{esc_line(v, 2000)}"
                              "</td></tr>" for k, v in items[:MAX_METADATA])
            more = (f"<p class='muted'>{len(items) - MAX_METADATA} more entries not shown.</p>"
                    if len(items) > MAX_METADATA else "")
            out.append(f"<details{self.open_attr}><summary>Metadata ({len(items)})</summary><table>"
                       f"<tr><th>key</th><th>value</th></tr>{rows_md}</table>{more}</details>")
        if m.facts.doc_string:
            doc = m.facts.doc_string[:MAX_DOC_CHARS]
            more = " (cut)" if len(m.facts.doc_string) > MAX_DOC_CHARS else ""
            out.append(f"<details{self.open_attr}><summary>Doc string{more}</summary><pre>{esc(doc)}</pre></details>")
        out.append("</section>")
        return "\n".join(out)

    def reviews(self) -> str:
        rv = self.r.reviews
        out = ['<section id="reviews"><h2>Reviews</h2>']
        if rv.error:
            out.append(f"<p class='note'>The review file could not be read: {esc(rv.error)}</p>")
        elif not rv.available:
            out.append("<p class='muted'>No review file was used: every overload and specialised value is shown "
                       "as unreviewed.</p>")
        else:
            out.append(f"<p>Reviews from <code>{esc(rv.sidecar or '')}</code> (matched by body fingerprint).</p>")
        counts = rv.counts
        total = sum(counts.values())
        if total:
            out.append("<p>" + " ".join(f"{_badge(s)} {counts.get(s, 0)}" for s in STATUSES)
                       + f" <span class='muted'>of {total} reviewable overloads and values in the families shown"
                       "</span></p>")
        flagged: list[tuple[FamilyInfo, BodyInfo, SpecialisedInfo | None, ReviewInfo]] = []
        for f in self.r.families:
            for b in f.bodies:
                if b.review is not None and b.review.status in ("suspicious", "wrong"):
                    flagged.append((f, b, None, b.review))
                for spec in b.specialised:
                    if spec.review is not None and spec.review.status in ("suspicious", "wrong"):
                        flagged.append((f, b, spec, spec.review))
        if flagged:
            rows = []
            for f, b, spec_or_none, review in flagged:
                what = (f"<a href='#{spec_or_none.id}'>{esc_line(spec_or_none.where, 120)}</a>"
                        if spec_or_none is not None
                        else f"<a href='#{b.id}'>overload</a>")
                rows.append(f"<tr><td>{_badge(review.status)}</td><td><a href='#{f.id}'>{esc_line(f.label, 120)}</a>"
                            f"</td><td>{esc_line(b.title, 120)}</td><td>{what}</td>"
                            f"<td class='wrap'>{esc(review.note)}</td></tr>")
            out.append("<h3>Marked suspicious or wrong</h3><table><tr><th>status</th><th>family</th><th>body</th>"
                       "<th>what</th><th>note</th></tr>" + "".join(rows) + "</table>")
        out.append("</section>")
        return "\n".join(out)

    def findings(self) -> str:
        r = self.r
        out = [f'<section id="findings"><h2>Findings ({len(r.findings) + r.findings_omitted})</h2>']
        if not r.findings:
            out.append("<p class='muted'>None.</p>")
        else:
            out.append("<table><tr><th>severity</th><th>kind</th><th>message</th><th>where</th></tr>")
            for x in r.findings:
                out.append(f"<tr><td class='sev-{esc(x.severity)}'>{esc(x.severity)}</td><td>{esc(x.kind)}</td>"
                           f"<td class='wrap'>{esc(x.message)}</td>"
                           f"<td class='wrap mono'>{esc(' / '.join(x.where))}</td></tr>")
            out.append("</table>")
            if r.findings_omitted:
                out.append(f"<p class='muted'>{r.findings_omitted} more findings not listed.</p>")
        out.append("</section>")
        return "\n".join(out)

    def diff(self) -> str:
        """The comparison section, drawn by the diff's own HTML renderer."""
        d = self.r.diff
        assert d is not None
        out = ['<section id="diff" class="diff"><h2>Changes</h2>',
               f"<p>Compared with <code>{esc(PurePath(d.other).name or d.other)}</code>.</p>"]
        out += summary_html(d.diff)
        out += changes_html(d.diff, len(d.changes), heading="h3")
        if d.changes_omitted:
            out.append(f"<p class='muted'>{d.changes_omitted} more changes not listed.</p>")
        out.append("</section>")
        return "\n".join(out)

    def families(self) -> str:
        r = self.r
        out = [f'<section id="families"><h2>Families ({len(r.families)})</h2>']
        if not r.families:
            out.append("<p class='muted'>No local functions and no aten calls (no torch provenance metadata).</p>")
        else:
            out.append("<table><tr><th>family</th><th>kind</th><th class='num'>overloads</th>"
                       "<th class='num'>calls</th><th class='num'>bodies</th><th class='num'>specialised</th>"
                       "<th>reviews</th></tr>")
            for f in r.families:
                name = (f"<a href='#{f.id}'>{esc_line(f.label, 160)}</a>" if f.detailed else esc_line(f.label, 160))
                kind = "function" if f.kind == "function" else "aten call"
                bodies = str(f.body_count) if f.detailed else "-"
                spec = str(f.specialised_count) if f.detailed else "-"
                out.append(f"<tr><td class='mono'>{name}</td><td>{kind}</td><td class='num'>{len(f.overloads)}</td>"
                           f"<td class='num'>{f.calls:,}</td><td class='num'>{bodies}</td>"
                           f"<td class='num'>{spec}</td><td>{_review_counts(f.review_counts)}</td></tr>")
            out.append("</table>")
            if r.families_omitted:
                out.append(f"<p class='muted'>{r.families_omitted} families are listed without detail.</p>")
        for f in r.families:
            if f.detailed:
                out.append(self.family(f))
        out.append("</section>")
        return "\n".join(out)

    def family(self, f: FamilyInfo) -> str:
        opened = self.open_attr or (" open" if self.small else "")
        kind = "local function" if f.kind == "function" else "aten call"
        out = [f"<details class='family' id='{f.id}'{opened}><summary>{esc_line(f.label, 200)} "
               f"<span class='muted'>({kind}; {self._fam_counts(f)})</span> {_review_counts(f.review_counts)}"
               "</summary>"]
        if f.torchscript_variants:
            out.append("<p class='muted'>TorchScript module-function variants (Name, Name.1, …) shown as overloads."
                       "</p>")
        out.append("<table><tr><th>overload</th><th class='num'>calls</th><th>target / function</th>"
                   "<th>torchlib</th><th class='num'>nodes</th><th>bodies</th></tr>")
        shown = {b.id for b in f.bodies}
        for ov in f.overloads:
            what = ov.target or (":".join(x for x in (".".join(x for x in ov.function[:2] if x), ov.function[2]) if x)
                                 if ov.function else "")
            links = ", ".join(f"<a href='#{bid}'>{bid.rsplit('-', 1)[1]}</a>" if bid in shown else
                              f"{bid.rsplit('-', 1)[1]}" for bid in ov.body_ids) or "<span class='muted'>-</span>"
            lowering = (f"<code>{esc(ov.torchlib.function)}</code>, {ov.torchlib.kind}" if ov.torchlib is not None
                        else "<span class='muted'>-</span>")
            out.append(f"<tr><td class='mono'>{esc_line(ov.overload or '(default)', 200)}</td>"
                       f"<td class='num'>{ov.calls:,}</td><td class='mono'>{esc_line(what, 200)}</td>"
                       f"<td>{lowering}</td>"
                       f"<td class='num'>{'' if ov.nodes is None else f'{ov.nodes:,}'}</td><td>{links}</td></tr>")
        out.append("</table>")
        for b in f.bodies:
            out.append(_body_html(b, self.open_attr))
        if f.bodies_omitted:
            out.append(f"<p class='muted'>{f.bodies_omitted} more distinct bodies not shown.</p>")
        out.append("</details>")
        return "\n".join(out)

    def op_histogram(self) -> str:
        ops = self.r.op_histogram
        rows = "".join(f"<tr><td class='mono'>{esc(o.domain or 'ai.onnx')}</td><td class='mono'>{esc(o.op_type)}</td>"
                       f"<td class='num'>{o.count:,}</td></tr>" for o in ops)
        return (f'<section id="ops"><h2>Operators</h2><details{self.open_attr}><summary>Main-graph op histogram '
                f"({len(ops)} op types, {sum(o.count for o in ops):,} nodes)</summary><table><tr><th>domain</th>"
                f"<th>op type</th><th class='num'>count</th></tr>{rows}</table></details></section>")

    def notes(self) -> str:
        if not self.r.notes:
            return ""
        items = "".join(f"<li>{esc(n)}</li>" for n in self.r.notes)
        return f'<section id="notes"><h2>Notes</h2><ul>{items}</ul></section>'

    def legend(self) -> str:
        parts = [f"<span><span class='spec {c}'>&nbsp;{esc(c.label)}&nbsp;</span></span>" for c in _HIGHLIGHTED]
        parts += [f"<span>{_badge(s)}</span>" for s in STATUSES]
        return ("<footer><h2>Legend</h2><p class='legend'>" + " ".join(parts)
                + "</p><p class='muted'>Hover a highlighted value for what varies and which aten argument it came "
                "from; click it for its row.</p></footer>")

    @staticmethod
    def _fam_counts(f: FamilyInfo) -> str:
        n = len(f.overloads)
        return f"{n} overload{'s' if n != 1 else ''}, {f.calls:,} call{'s' if f.calls != 1 else ''}"


# --- helpers ----------------------------------------------------------------------------------------------------


def _body_html(b: BodyInfo, open_attr: str) -> str:
    specs = b.spec_by_id
    status = b.review.status if b.review else None
    calls = f"{b.calls:,} call{'s' if b.calls != 1 else ''}"
    nodes = f"{b.node_count:,} node{'s' if b.node_count != 1 else ''}"
    out = [f"<details class='body' id='{b.id}'{open_attr or ' open'}><summary><span class='mono'>"
           f"{esc_line(b.title, 200)}</span> <span class='muted'>({calls}, {nodes}, "
           f"{len(b.specialised)} specialised)</span>"
           + (f" {_badge(status)}" if status else "") + "</summary>"]
    r = b.review
    if r is not None and (r.status != "unreviewed" or r.note or r.previous_status):
        out.append(_review_block("Overload review", r))
    out.append(f"<p class='muted'>fingerprint <code>{esc(b.fingerprint[:16])}</code>, template "
               f"<code>{esc(b.template[:16])}</code>")
    if b.members and (len(b.members) > 1 or b.members[0] != b.title):
        more = f" and {b.members_omitted:,} more" if b.members_omitted else ""
        out.append(f"; calls: <span class='mono'>{esc_line(', '.join(b.members), 2000)}</span>{more}")
    out.append("</p>")
    out.append(_lowering(b))
    if b.signature is not None:
        sig = b.signature
        out.append("<h4>Aten signature <small class='muted'>(this call's values bound to parameter names)</small>"
                   "</h4>")
        out.append(f"<pre class='sig'>{_spans(sig.spans, specs, b.id, signature=True)}</pre>")
        if sig.problem:
            out.append(f"<p class='note'>{esc(sig.problem)}</p>")
    out.append("<h4>ONNX body</h4>")
    lines = "\n".join(_spans(line, specs, b.id) for line in b.lines)
    more = f"\n… {b.lines_omitted:,} more lines" if b.lines_omitted else ""
    out.append(f"<pre class='body'>{lines}{esc(more)}</pre>")
    out.append(_spec_table(b))
    out.append(_per_call(b))
    out.append(_left_out(b, open_attr))
    if b.svg:
        out.append(f"<div class='graph'>{inline_svg(b.svg)}</div>")
    elif b.graph_note:
        out.append(f"<p class='muted'>{esc(b.graph_note)}</p>")
    out.append("</details>")
    return "\n".join(out)

def _spans(spans: Iterable[Span], specs: dict[str, SpecialisedInfo], bid: str,
          signature: bool = False) -> str:
    html = []
    named: set[str] = set()  # parameters whose "name=" span was seen: the next span is the value
    for span in spans:
        text = esc(span.text)
        spec = specs.get(span.spec) if span.spec else None
        anchor = ""
        if signature and span.parameter:
            if span.parameter not in named:
                named.add(span.parameter)
                html.append(f"<span class='param'>{text}</span>")
                continue
            anchor = f" id='{bid}-a-{_param_id(span.parameter)}'"
        if spec is not None:
            html.append(f"<a class='spec {spec.category}'{anchor} href='#{spec.id}' "
                        f"title='{esc(spec.description)}'>{text}</a>")
        elif anchor:
            html.append(f"<span{anchor}>{text}</span>")
        else:
            html.append(text)
    return "".join(html)

def _spec_table(b: BodyInfo) -> str:
    if not b.specialised:
        return "<p class='muted'>No specialised values.</p>"
    with_reviews = any(s.review is not None for s in b.specialised)
    head = ("<tr><th>value</th><th>where</th><th>in the family</th><th>evidence</th>"
            + ("<th>review</th>" if with_reviews else "") + "</tr>")
    params = {a.parameter for a in b.signature.arguments} if b.signature else set()
    rows = []
    for s in b.specialised:
        if s.kind == "parametric":
            family = f"parametric: @{esc(s.refers_to or '')}"
            if s.call_sites:
                family += ", varies between calls" if s.varies else ", the same at every call"
        elif s.varies:
            family = "varies: " + " | ".join(esc(value_text(v, 60)) for v in s.family_values[:12])
            if len(s.family_values) > 12:
                family += f" | … ({len(s.family_values)} values)"
        else:
            family = esc(Category.LONE.label) if b.lone else "same in every body"
        evidence = [("shape-specialised: " if a.rule == s.shape else "")
                    + (f"<a href='#{b.id}-a-{_param_id(a.parameter)}'>{esc(a.parameter)}</a>"
                       if a.parameter in params else esc(a.parameter))
                    + f"={esc(value_text(a.value, 60))}" + _at(a.place, s.where)
                    + f": {esc(a.rule)}" for a in s.links]
        if s.shape and not any(a.rule == s.shape for a in s.links):
            evidence.insert(0, f"shape-specialised: {esc(s.shape)}")
        if s.call_sites:
            evidence.append(f"each call passes its own value (<a href='#{b.id}-calls'>{len(s.call_sites)} calls</a>)")
        review = ""
        if with_reviews:
            review = "<td>" + (_review_inline(s.review) if s.review else "") + "</td>"
        value = esc(s.value_text) if s.kind != "parametric" else f"@{esc(s.refers_to or '')}"
        rows.append(f"<tr id='{s.id}'><td class='mono'><span class='spec {s.category}' "
                    f"title='{esc(s.description)}'>{value}</span></td>"
                    f"<td class='mono'>{esc_line(s.where, 200)}</td><td class='mono'>{family}</td>"
                    f"<td>{'<br>'.join(evidence) or '-'}</td>{review}</tr>")
    baked = sorted({s.baked_by for s in b.specialised if s.baked_by})
    note = "".join(f"<p class='muted'>{esc(baked_text(f)[0].upper() + baked_text(f)[1:])}.</p>" for f in baked)
    return "<h4>Specialised values</h4><table>" + head + "".join(rows) + "</table>" + note


def _at(place: str, where: str) -> str:
    """`` at <code>Mul on query/key</code>``: where the lowering implements an argument, unless the row says it."""
    return f" at <code>{esc(place)}</code>" if place and place != where else ""


def _lowering(b: BodyInfo) -> str:
    """``aten::transpose.int → torchlib aten_transpose, trace_only`` with its source, and a rewriter's note."""
    t = b.torchlib
    if t is None:
        return ""
    out = (f"<p>{esc(t.target)} → torchlib <code>{esc(t.function)}</code>, {t.kind} "
           f"<span class='muted'>({esc(t.source)})</span>")
    if b.rewritten_by:
        out += (f"<br><span class='muted'>The optimizer's rewriter changed these nodes (rule "
                f"{esc(', '.join(b.rewritten_by))}), so their values are not attributed to torchlib's code.</span>")
    return out + "</p>"


def _per_call(b: BodyInfo, limit: int = 200) -> str:
    """Parametric values as each call site passes them, one column per value; values unlike the first call's are
    marked as varying."""
    cols = [s for s in b.specialised if s.call_sites]
    if not cols:
        return ""
    calls = list(dict.fromkeys(c.call for s in cols for c in s.call_sites))  # in order, once each
    head = "".join(f"<th class='mono'><a href='#{s.id}'>@{esc_line(s.refers_to or '', 80)}</a> "
                   f"<span class='muted'>({esc_line(s.where, 80)})</span></th>" for s in cols)
    values = [{c.call: c for c in s.call_sites} for s in cols]
    rows = []
    for call in calls[:limit]:
        cells = []
        for s, by_call in zip(cols, values, strict=True):
            c = by_call.get(call)
            if c is None:
                cells.append("<td class='muted'>-</td>")
            elif c.value != s.call_sites[0].value:
                cells.append(f"<td class='mono'><span class='spec {Category.VARIES}'>{esc(c.text)}</span></td>")
            else:
                cells.append(f"<td class='mono'>{esc(c.text)}</td>")
        rows.append(f"<tr><td class='mono'>{esc_line(call, 200)}</td>{''.join(cells)}</tr>")
    more = f"<p class='muted'>{len(calls) - limit:,} more calls not listed.</p>" if len(calls) > limit else ""
    return (f"<h4 id='{b.id}-calls'>Per call site <small class='muted'>(the values each call passes to the "
            "function's attributes)</small></h4><table><tr><th>call</th>" + head + "</tr>" + "".join(rows)
            + "</table>" + more)


def _left_out(b: BodyInfo, open_attr: str) -> str:
    """The literals of a lone body left out as ONNX schema defaults, one click away."""
    if not b.left_out:
        return ""
    n = len(b.left_out)
    rows = "".join(f"<tr id='{s.id}'><td class='mono'>{esc(s.value_text)}</td><td class='mono'>{esc_line(s.where, 200)}"
                   "</td></tr>" for s in b.left_out)
    return (f"<details class='left-out'{open_attr}><summary>{n} attribute{'s' if n != 1 else ''} equal to "
            f"{'their' if n != 1 else 'its'} ONNX default left out (neither varying nor linked)</summary>"
            f"<table><tr><th>value</th><th>where</th></tr>{rows}</table></details>")


def inline_svg(svg: str) -> str:
    """A standalone SVG from ``to_svg`` made fit to sit inside HTML: no XML declaration, no namespace URL."""
    body = _SVG_HEAD.sub("", svg, count=1)
    body = body.replace(_SVG_NS, "", 1)
    return body.replace("://", "&#58;//")


def _param_id(name: str | None) -> str:
    """A fragment-safe id for an aten parameter name (schema names are identifiers; anything else is hexed)."""
    text = name or ""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text):
        return text
    return "x" + text.encode("utf-8").hex()


def _badge(status: str) -> str:
    label = {"unreviewed": "unreviewed", "ok": "OK", "suspicious": "suspicious", "wrong": "wrong"}.get(status)
    if label is None:
        return f"<span class='badge unreviewed'>{esc(status)}</span>"
    return f"<span class='badge {status}'>{label}</span>"


def _review_counts(counts: dict[str, int]) -> str:
    shown = [f"{_badge(s)} {counts[s]}" for s in STATUSES if counts.get(s)]
    return " ".join(shown)


def _review_inline(r: ReviewInfo) -> str:
    out = _badge(r.status)
    if r.note:
        out += f" {esc(r.note)}"
    if r.previous_status:
        out += (f" <span class='muted'>(reviewed {esc(r.previous_status)} before the values changed"
                + (f": {esc(r.previous_note)}" if r.previous_note else "") + ")</span>")
    return out


def _review_block(title: str, r: ReviewInfo) -> str:
    when = f" <span class='muted'>{esc(r.updated)}</span>" if r.updated else ""
    return f"<p class='note'><b>{title}:</b> {_review_inline(r)}{when}</p>"


def _names(names: list[str], limit: int = 50) -> str:
    if not names:
        return "-"
    shown = ", ".join(f"<code>{esc_line(n, 200)}</code>" for n in names[:limit])
    return shown + (f" and {len(names) - limit:,} more" if len(names) > limit else "")
