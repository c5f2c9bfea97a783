"""Markdown from ``report`` and ``diff`` renders inert on GitHub: checked with cmark-gfm (GitHub's own parser, with
its autolink, table, strikethrough and tagfilter extensions) on exports whose strings carry mentions, autolinks,
e-mail addresses, images, links and raw HTML; and no Markdown output is longer than a GitHub comment."""

from __future__ import annotations

import re
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from inspector.cli import main
from tests.gfm import gfm, shown, tags

ZOO = Path(__file__).parent / "zoo"
HOSTILE = [
    "@octocat please look", "see www.evil.example/x", "mail bob@evil.example now", "http://evil.example/a",
    "HTTPS://EVIL.EXAMPLE/B", "ftp://evil.example/c", "mailto:eve@evil.example", "xmpp:eve@evil.example/r",
    "![img](http://evil.example/i.png)", "[link](https://evil.example)", "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>", "<a href='http://evil.example'>x</a>", "<details><summary>x", "`code` **b** _i_",
    "| a | b |", "&#64;octocat", "WWW.Evil.Example", "@org/team",
]
ALLOWED_TAGS = {"p", "h1", "h2", "h3", "h4", "details", "summary", "b", "strong", "em", "code", "br", "table",
                "thead", "tbody", "tr", "th", "td", "pre", "blockquote", "ul", "ol", "li", "hr"}


def assert_inert(markdown: str) -> None:
    found = tags(markdown)
    assert found <= ALLOWED_TAGS, found - ALLOWED_TAGS
    text = shown(markdown)
    assert not re.search(r"(?<![\w])@[A-Za-z0-9]", text), "a mention GitHub would link"
    assert not re.search(r"\w@\w", text), "an e-mail address GitHub would link"
    assert not re.search(r"(?i)www\.", text) and "://" not in text, "an autolink"
    assert "octocat" in text and "evil.example" in text  # the hostile text is there, shown, not live


def _hostile_model(src: Path, dest: Path, tag: str, extra: int = 0, long: int = 0, functions: int = 0) -> Path:
    m = onnx.load(str(src), load_external_data=False)
    m.producer_name = HOSTILE[0]
    m.doc_string = "\n".join(HOSTILE)
    m.graph.doc_string = " ".join(HOSTILE)
    for k, s in enumerate(HOSTILE):
        p = m.metadata_props.add()
        p.key, p.value = f"{s} {k}", s
    for k, node in enumerate(m.graph.node):
        node.name = f"{HOSTILE[k % len(HOSTILE)]} {tag}{k}"
    for k, s in enumerate(HOSTILE * max(1, extra)):
        name = f"{s} {tag} {k} " + "x" * long
        value = float(k + (1000 if tag == "B" else 0))  # differs, so that A's are removed and B's added
        m.graph.initializer.append(helper.make_tensor(name, TensorProto.FLOAT, [1], [value]))
        if k < 3:  # read by a node of a hostile name, which the diff names as what reads it (``Change.read_by``)
            m.graph.node.append(helper.make_node("Identity", [name], [f"read {tag} {k}"], name=f"{s} reader {k}"))
    for k in range(functions):  # families only one side has, with long names: the diff's summary table grows
        m.functions.append(helper.make_function(
            f"local{tag}", f"{HOSTILE[k % len(HOSTILE)]} {k} " + tag * long, ["x"], ["y"],
            [helper.make_node("Identity", ["x"], ["y"])], [helper.make_opsetid("", 18)]))
    onnx.save(m, str(dest))
    return dest


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    return (_hostile_model(ZOO / "pair_eps_a.onnx", tmp_path / "a.onnx", "A"),
            _hostile_model(ZOO / "pair_eps_b.onnx", tmp_path / "b.onnx", "B"))


def test_diff_markdown_renders_inert(pair, capsys):
    a, b = pair
    assert main(["diff", str(a), str(b), "--format", "md"]) == 1
    out = capsys.readouterr().out
    assert_inert(out)


def test_report_markdown_renders_inert(pair, capsys):
    a, b = pair
    assert main(["report", str(a), "--compare", str(b), "--format", "md", "-o", "-"]) == 0
    assert_inert(capsys.readouterr().out)


def test_markdown_outputs_fit_a_github_comment_and_say_what_was_cut(tmp_path: Path, capsys):
    a = _hostile_model(ZOO / "pair_eps_a.onnx", tmp_path / "a.onnx", "A", extra=20, long=3000, functions=80)
    b = _hostile_model(ZOO / "pair_eps_b.onnx", tmp_path / "b.onnx", "B", extra=20, long=3000, functions=80)
    assert main(["diff", str(a), str(b), "--format", "md"]) == 1
    diff = capsys.readouterr().out
    assert main(["report", str(a), "--compare", str(b), "--format", "md", "-o", "-"]) == 0
    report = capsys.readouterr().out
    for text in (diff, report):
        assert len(text) <= 65_536
        assert re.search(r"not shown|Left out|Cut to fit|more changes in this group", text)
        assert text.count("<details>") == text.count("</details>")
        assert_inert(text)


def test_fit_markdown_closes_what_it_cuts():
    from inspector.report.diff_markdown import fit_markdown

    text = "<details><summary>s</summary>\n\n````\n" + "x\n" * 50_000 + "````\n</details>\n"
    cut = fit_markdown(text, 10_000)
    assert len(cut) <= 10_000 and re.search(r"the last 9\d,\d{3} characters \(4\d,\d{3} lines\) are not shown", cut)
    rendered = gfm(cut)
    assert rendered.count("<pre>") == 1 and "Cut to fit" in rendered.split("</pre>", 1)[1]
    assert cut.count("<details>") == cut.count("</details>")


@pytest.mark.parametrize("command", [
    ["diff", str(ZOO / "pair_heads_a.onnx"), str(ZOO / "pair_heads_b.onnx"), "--format", "md"],
    ["diff", str(ZOO / "llama_gqa.onnx"), str(ZOO / "llama_gqa_noopt.onnx"), "--format", "md"],
    ["report", str(ZOO / "gpt2.onnx"), "--format", "md", "-o", "-"],
])
def test_markdown_reads_as_its_text_on_github(command: list[str], capsys) -> None:
    """Model text is backslash-escaped (``gpt\\_neox``), which Markdown reads back and an HTML block (``<summary>``)
    does not: a change group's summary read ``aten::mul \\[aten\\]`` on GitHub. Rendered, no escape shows."""
    main(command)
    out = capsys.readouterr().out
    assert "\\_" in out  # (names with underscores are escaped in the file ...)
    text = shown(out)
    assert "_" in text and not re.search(r"\\[\\`*_{}\[\]#|~$!]", text)  # (... and read without their escapes)
    assert "&amp;" not in text and "&#" not in text
