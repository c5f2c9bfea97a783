"""The HTML report and the diff page as a browser prints them (Print / Save as PDF, A4 or US Letter): every table,
name, code block and badge stays inside the page, headers repeat, rows and short tables are not split, and closed
sections print open.

No browser is needed: the pages are rendered from real zoo exports (a copy with reviews whose notes are long), parsed,
and each element is given the style the print media gives it by a small cascade over the page's own CSS (the
unconditional rules and the ``@media print`` ones, by specificity and order, inherited where CSS inherits). The
assertions are about what that style does to these elements: wrapping anywhere, fixed column shares that add up,
header rows in ``<thead>``, no break inside a row. (tests/test_report_print_chromium.py prints with Chromium.)
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest

import inspector
from inspector.core.model.index import open_index
from inspector.core.review.store import ReviewStore, review_keys
from inspector.core.specialise.specialiser import Specialiser
from inspector.report import build_report
from inspector.report.html import render_html
from tests.conftest import ZOO

VOID = {"meta", "br", "hr", "img", "input", "link", "col", "wbr"}
INHERITED = {"overflow-wrap", "white-space", "font-size", "print-color-adjust", "color-scheme"}
UA_FONT = {"h1": "2em", "h2": "1.5em", "h3": "1.17em", "h4": "1em", "small": "0.833em"}  # Chromium's defaults
LETTER_HEIGHT_MM = 279.4


@dataclass(eq=False)
class Node:
    tag: str
    attrs: dict[str, str]
    parent: Node | None = None
    children: list[Node] = field(default_factory=list)
    text: list[str] = field(default_factory=list)  # the text directly inside

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def walk(self) -> list[Node]:
        out = [self]
        for c in self.children:
            out += c.walk()
        return out

    def all_text(self) -> str:
        return "".join(self.text) + "".join(c.all_text() for c in self.children)

    def ancestors(self) -> list[Node]:
        out, n = [], self.parent
        while n is not None:
            out.append(n)
            n = n.parent
        return out


class _Tree(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.at = self.root
        self.styles: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs}, self.at)
        self.at.children.append(node)
        if tag not in VOID:
            self.at = node

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.at.children.append(Node(tag, {k: v or "" for k, v in attrs}, self.at))

    def handle_endtag(self, tag: str) -> None:
        n: Node | None = self.at
        while n is not None and n.tag != tag:
            n = n.parent
        assert n is not None and n.parent is not None, f"</{tag}> closes nothing"
        self.at = n.parent

    def handle_data(self, data: str) -> None:
        if self.at.tag == "style":
            self.styles.append(data)
        self.at.text.append(data)


@dataclass(frozen=True, slots=True)
class Rule:
    parts: tuple[str, ...]  # compound selectors and the combinators between them (" " or ">"), outermost first
    pseudo_element: str
    specificity: tuple[int, int, int]
    order: int
    declarations: dict[str, str]


_SIMPLE = r"[.#][\w-]+|\[[\w-]+\]|:root|:hover|:nth-child\(\d+\)"
_COMPOUND = re.compile(rf"^([a-z][a-z0-9]*|\*)?((?:{_SIMPLE})*)(::[\w-]+)?$")


def _rules(css: str) -> tuple[list[Rule], dict[str, str]]:
    """The rules that apply in print (unconditional and ``@media print``; other media left out) and the
    declarations of the ``@page`` rules (those of its margin boxes as ``margin-box PROPERTY``)."""
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    rules: list[Rule] = []
    page: dict[str, str] = {}
    i = 0
    while i < len(css):
        brace = css.find("{", i)
        if brace < 0:
            break
        head = css[i:brace].strip()
        depth, j = 1, brace + 1
        while depth:
            depth += {"{": 1, "}": -1}.get(css[j], 0)
            j += 1
        body = css[brace + 1:j - 1]
        if head.startswith("@page"):
            page.update(_declarations(re.sub(r"@[\w-]+\s*\{[^}]*\}", "", body)))
            for inner in re.findall(r"@[\w-]+\s*\{([^}]*)\}", body):
                page.update({f"margin-box {k}": v for k, v in _declarations(inner).items()})
        elif head.startswith("@media"):
            if head.split(None, 1)[1].strip() == "print":
                for r in _rules(body)[0]:
                    rules.append(Rule(r.parts, r.pseudo_element, r.specificity, len(rules), r.declarations))
        else:
            for selector in head.split(","):
                rules.append(_rule(selector.strip(), len(rules), _declarations(body)))
        i = j
    return rules, page


def _declarations(body: str) -> dict[str, str]:
    out = {}
    for decl in body.split(";"):
        if ":" in decl:
            k, v = decl.split(":", 1)
            out[k.strip()] = v.strip()
    return out


def _rule(selector: str, order: int, declarations: dict[str, str]) -> Rule:
    parts = tuple(re.sub(r"\s*>\s*", " > ", selector).split())
    pseudo = ""
    ids = classes = tags = 0
    for p in parts:
        if p == ">":
            continue
        m = _COMPOUND.match(p)
        assert m, f"the test's cascade does not know the selector {selector!r}"
        tags += bool(m.group(1) and m.group(1) != "*") + bool(m.group(3))
        simple = re.findall(_SIMPLE, m.group(2))
        ids += sum(x[0] == "#" for x in simple)
        classes += sum(x[0] != "#" for x in simple)
        pseudo = (m.group(3) or "").lstrip(":") or pseudo
    return Rule(parts, pseudo, (ids, classes, tags), order, declarations)


def _matches_compound(node: Node, compound: str) -> bool:
    m = _COMPOUND.match(compound)
    assert m is not None
    if m.group(1) and m.group(1) not in ("*", node.tag):
        return False
    for sel in re.findall(_SIMPLE, m.group(2)):
        if sel == ":hover":  # nothing is hovered on paper
            return False
        if sel[0] == "." and sel[1:] not in node.classes:
            return False
        if sel[0] == "#" and node.attrs.get("id") != sel[1:]:
            return False
        if sel[0] == "[" and sel[1:-1] not in node.attrs:
            return False
        if sel == ":root" and node.tag != "html":
            return False
        if sel.startswith(":nth-child"):
            siblings = node.parent.children if node.parent else [node]
            if siblings.index(node) + 1 != int(sel[11:-1]):
                return False
    return True


def _matches(node: Node, rule: Rule) -> bool:
    parts = [re.sub(r"::[\w-]+$", "", p) for p in rule.parts]
    if not _matches_compound(node, parts[-1]):
        return False
    at: Node | None = node
    k = len(parts) - 2
    while k >= 0:
        child = parts[k] == ">"
        if child:
            k -= 1
        at = at.parent if at is not None else None
        if child:  # the parent itself
            if at is None or not _matches_compound(at, parts[k]):
                return False
        else:  # some ancestor
            while at is not None and not _matches_compound(at, parts[k]):
                at = at.parent
            if at is None:
                return False
        k -= 1
    return True


class PrintStyle:
    """The cascade of one page's CSS as the print media sees it."""

    def __init__(self, css: str) -> None:
        self.rules, self.page = _rules(css)
        self._cache: dict[tuple[int, str, str], str | None] = {}

    def get(self, node: Node, prop: str, pseudo: str = "") -> str | None:
        key = (id(node), prop, pseudo)
        if key not in self._cache:
            found = [r for r in self.rules if prop in r.declarations and r.pseudo_element == pseudo
                     and _matches(node, r)]
            value = max(found, key=lambda r: (r.specificity, r.order)).declarations[prop] if found else None
            if value is None and prop in INHERITED and node.parent is not None and not pseudo:
                value = self.get(node.parent, prop)
            self._cache[key] = value
        return self._cache[key]

    def font_pt(self, node: Node) -> float:
        """The font size in points, declared sizes resolved against the parent's (16px at the root)."""
        parent = self.font_pt(node.parent) if node.parent is not None else 12.0
        found = [r for r in self.rules if "font-size" in r.declarations and not r.pseudo_element and _matches(node, r)]
        value = max(found, key=lambda r: (r.specificity, r.order)).declarations["font-size"] if found else \
            UA_FONT.get(node.tag)
        if value is None:
            return parent
        m = re.fullmatch(r"([\d.]+)(pt|px|em|%)", value)
        assert m, f"the test's cascade does not know the font size {value!r}"
        number = float(m.group(1))
        return {"pt": number, "px": number * 0.75, "em": number * parent, "%": number * parent / 100}[m.group(2)]


def _page(html: str) -> tuple[Node, PrintStyle]:
    tree = _Tree()
    tree.feed(html)
    tree.close()
    assert tree.at is tree.root, "an element is left open"
    return tree.root, PrintStyle("\n".join(tree.styles))


def _body(root: Node) -> Node:
    return next(n for n in root.walk() if n.tag == "body")


@pytest.fixture(scope="module")
def reviewed_report(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The report of llama_gqa_noopt (32 families, closed on screen) with reviews of every status and long notes,
    as ``onnx-inspector report`` writes it; the model is a copy, so no sidecar lands in tests/zoo."""
    model = tmp_path_factory.mktemp("print") / "llama_gqa_noopt.onnx"
    shutil.copyfile(ZOO / "llama_gqa_noopt.onnx", model)
    index = open_index(model)
    store = ReviewStore(model)
    specialiser = Specialiser(index)
    statuses = ["wrong", "suspicious", "ok"]
    for n, family in enumerate(index.families[:12]):
        key = review_keys(specialiser.analyse(family))[0][0]
        store.set(key, statuses[n % 3], f"{statuses[n % 3]}: baked for seq_len=128, see "
                  "modeling_llama.py:apply_rotary_pos_emb(q,k,cos,sin,position_ids,unsqueeze_dim=1)" * 2)
    return render_html(build_report(open_index(model), ReviewStore(model)))


def test_the_page_box_leaves_the_paper_size_to_the_reader(reviewed_report: str) -> None:
    _root, style = _page(reviewed_report)
    assert style.page.get("margin"), "the printed page has its own margins"
    assert "size" not in style.page  # A4 or US Letter, whichever the reader prints on
    assert "counter(page)" in style.page.get("margin-box content", "")  # pages are numbered


def test_every_header_row_repeats_on_the_next_page_or_the_table_is_never_split(reviewed_report: str) -> None:
    root, style = _page(reviewed_report)
    tables = [n for n in root.walk() if n.tag == "table"]
    assert len(tables) > 50
    for t in tables:
        header_rows = [r for r in t.walk() if r.tag == "tr" and any(c.tag == "th" for c in r.children)
                       and not any(c.tag == "td" for c in r.children)]
        whole = any(style.get(n, "break-inside") == "avoid" for n in [t, *t.ancestors()])
        for row in header_rows:
            assert row.parent is not None and (row.parent.tag == "thead" or whole), t.attrs
        rows = [r for r in t.walk() if r.tag == "tr"]
        assert all(style.get(r, "break-inside") == "avoid" for r in rows)  # a row is never cut in half


def test_wide_tables_share_the_page_width_by_fixed_columns(reviewed_report: str) -> None:
    root, style = _page(reviewed_report)
    seen = set()
    for t in (n for n in root.walk() if n.tag == "table" and n.classes & {"families", "flagged", "overloads",
                                                                              "specialised", "per-call"}):
        assert style.get(t, "table-layout") == "fixed" and style.get(t, "width") == "100%", t.attrs
        head = next(r for r in t.walk() if r.tag == "tr")
        widths = [style.get(th, "width") for th in head.children if th.tag == "th"]
        if t.classes & {"families", "flagged", "overloads"}:  # a share for every column, adding up to the page
            assert None not in widths and sum(float(w.rstrip("%")) for w in widths if w) == 100, (t.attrs, widths)
        else:  # the remaining columns share what the named ones leave
            assert sum(float(w.rstrip("%")) for w in widths if w) <= 100, (t.attrs, widths)
        seen |= t.classes
    assert {"families", "flagged", "overloads", "specialised"} <= seen


def test_every_text_wraps_inside_its_box_at_a_readable_size(reviewed_report: str) -> None:
    root, style = _page(reviewed_report)
    body = _body(root)
    texts = [n for n in body.walk() if "".join(n.text).strip() and n.tag != "svg"
             and not any(a.tag == "svg" for a in n.ancestors())]
    assert len(texts) > 3000
    for n in texts:
        white_space = style.get(n, "white-space") or "normal"
        if white_space == "nowrap":  # badges and a badge with its count: short, kept on one line
            assert len(n.all_text().strip()) <= 24 and n.classes & {"badge", "tally"}, n.all_text()[:80]
        else:
            assert white_space in ("normal", "pre-wrap"), (n.tag, n.attrs, white_space)
            assert style.get(n, "overflow-wrap") == "anywhere", (n.tag, n.attrs)  # long names break anywhere
        assert style.font_pt(n) >= 7, (n.tag, n.attrs, style.font_pt(n))
    longest = max((t for n in texts for t in "".join(n.text).split()), key=len)
    # text with nowhere to break, wider than a families-table column (a third of A4's 188 mm holds ~38 characters
    # of 8pt mono): it breaks anywhere (above)
    assert len(longest) > 60


def test_closed_sections_print_open_and_fills_are_kept(reviewed_report: str) -> None:
    root, style = _page(reviewed_report)
    details = [n for n in root.walk() if n.tag == "details"]
    closed = [d for d in details if "open" not in d.attrs]
    assert len(closed) > 30  # the screen shows 32 families closed ...
    for d in details:  # ... paper shows them all
        assert style.get(d, "content-visibility", "details-content") == "visible"
    badges = [n for n in root.walk() if "badge" in n.classes]
    assert {b.all_text() for b in badges} >= {"wrong", "suspicious", "OK", "unreviewed"}
    for b in badges:  # white on a coloured fill: printed with its fill, or it would vanish
        assert style.get(b, "print-color-adjust") == "exact"
    graphs = [n for n in root.walk() if n.tag == "svg"]
    assert graphs
    for g in graphs:  # page-wide at most and shorter than a Letter page (A4 is taller): never cut at an edge
        assert style.get(g, "max-width") == "100%" and style.get(g, "height") == "auto"
        height = style.get(g, "max-height") or ""
        assert height.endswith("mm") and float(height[:-2]) < LETTER_HEIGHT_MM - 40
        assert all(style.get(a, "overflow") in (None, "visible") for a in g.ancestors())


def test_the_diff_page_prints_the_same_way() -> None:
    root, style = _page(inspector.diff(ZOO / "t5_noopt.onnx", ZOO / "whisper.onnx").render("html"))
    assert style.page.get("margin") and "size" not in style.page
    tables = [n for n in root.walk() if n.tag == "table"]
    assert len(tables) > 20
    for t in tables:
        assert style.get(t, "table-layout") == "fixed" and style.get(t, "width") == "100%"
        head = next(r for r in t.walk() if r.tag == "tr")
        assert head.parent is not None and head.parent.tag == "thead"
        widths = [style.get(th, "width") or "" for th in head.children if th.tag == "th"]
        assert sum(float(w.rstrip("%")) for w in widths) == 100
        for cell in (n for n in t.walk() if n.tag in ("td", "code")):
            assert style.get(cell, "overflow-wrap") == "anywhere"
    details = [n for n in root.walk() if n.tag == "details"]
    assert details and all(style.get(d, "content-visibility", "details-content") == "visible" for d in details)


def test_the_reports_comparison_lays_out_its_sides_as_the_diff_page_does(tmp_path: Path) -> None:
    """A, B and what was matched: a two-column list, labels bold, in the report's comparison section as on the
    diff page (the report's section had no rule for them: three bare lines of label and path)."""
    from inspector.cli import main

    out = tmp_path / "report.html"
    assert main(["report", str(ZOO / "pair_eps_a.onnx"), "--compare", str(ZOO / "pair_eps_b.onnx"), "-o",
                 str(out)]) == 0
    for html in (out.read_text(), inspector.diff(ZOO / "pair_eps_a.onnx", ZOO / "pair_eps_b.onnx").render("html")):
        root, style = _page(html)
        lists = [n for n in root.walk() if n.tag == "dl"]
        assert lists and all(style.get(d, "display") == "grid" for d in lists)
        assert all(style.get(t, "font-weight") == "600" for d in lists for t in d.children if t.tag == "dt")
