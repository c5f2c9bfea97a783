"""The page templates ship precompiled (``inspector/report/templates/compiled.json``, written by
``scripts/gen_page_templates.py``): the committed form must be what Jinja makes of today's template sources, pages
rendered from it must equal pages compiled from the sources, and a template edited since it was compiled must be
compiled from its source."""

from __future__ import annotations

import json
from typing import Any

import jinja2
import pytest

from inspector.core.diff import diff_files
from inspector.core.model.index import open_index
from inspector.report import build_report, templating
from inspector.report import diff_html as diff_html_module
from inspector.report import html as html_module
from inspector.report.templating import COMPILED, compile_templates
from tests.conftest import FIXTURES, ROOT, ZOO

SHIPPED = ROOT / "inspector" / "report" / "templates" / COMPILED


def test_the_shipped_compiled_templates_are_not_stale() -> None:
    """Fails after a template is edited (or Jinja2 upgraded) until ``python scripts/gen_page_templates.py`` is run."""
    shipped = json.loads(SHIPPED.read_text("utf-8"))
    fresh = compile_templates()
    assert sorted(shipped["templates"]) == sorted(fresh["templates"]) == [
        "diff.html.j2", "diff_page.html.j2", "family.html.j2", "macros.html.j2", "paged.css", "print.css",
        "report.css", "report.html.j2"]
    assert shipped == fresh


def _pages(monkeypatch: pytest.MonkeyPatch, precompiled: bool) -> list[str]:
    """The HTML report of the hostile fixture, and of a zoo export with the diff against its pair, in print and
    screen layout, and a diff page, each from an environment of its own."""
    envs = {k: templating._environment(k, precompiled) for k in (True, False)}
    if precompiled:
        def refuse(*_a: Any, **_k: Any) -> Any:
            raise AssertionError("a shipped template was compiled from its source")
        for env in envs.values():
            monkeypatch.setattr(env, "compile", refuse)
    monkeypatch.setattr(html_module, "template_environment", lambda keep_newlines=True: envs[keep_newlines])
    monkeypatch.setattr(diff_html_module, "template_environment", lambda keep_newlines=True: envs[keep_newlines])
    hostile = build_report(open_index(FIXTURES / "hostile.onnx"))
    d = diff_files(ZOO / "pair_eps_a.onnx", ZOO / "pair_eps_b.onnx")
    compared = build_report(open_index(ZOO / "pair_eps_a.onnx"), compare=d)
    return [html_module.render_html(hostile), html_module.render_html(hostile, printing=True),
            html_module.render_html(compared, open_all=True), diff_html_module.render_html(d)]


def test_pages_from_the_compiled_templates_equal_pages_compiled_from_the_sources(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as m:
        from_sources = _pages(m, precompiled=False)
    shipped = _pages(monkeypatch, precompiled=True)
    assert shipped == from_sources
    assert "prod&lt;script&gt;alert(1)&lt;/script&gt;" in shipped[0]  # autoescaped as before
    assert "eps" in shipped[3]


def test_an_edited_template_is_compiled_from_its_source() -> None:
    """An entry is used only for the source it was made from: a checksum that differs means Jinja compiles."""
    made = compile_templates()["templates"]
    env = templating._environment(True, precompiled=False)
    marker = {"checksum": made["print.css"]["checksum"], "code": env.compile("marker", "print.css", raw=True)}
    env = templating._environment(True, precompiled=True)
    env.bytecode_cache = templating._Precompiled(dict(made, **{"print.css": marker}))
    assert env.get_template("print.css").render() == "marker"  # the entry is what is used
    env = templating._environment(True, precompiled=True)
    env.bytecode_cache = templating._Precompiled(dict(made, **{"print.css": dict(marker, checksum="0" * 40)}))
    source = (ROOT / "inspector" / "report" / "templates" / "print.css").read_text("utf-8")
    assert "{%" not in source and "{{" not in source
    assert env.get_template("print.css").render() == source  # compiled from the source


def test_another_jinja_version_compiles_from_the_sources(monkeypatch: pytest.MonkeyPatch) -> None:
    assert templating._shipped()
    monkeypatch.setattr(jinja2, "__version__", "0.0")
    assert templating._shipped() == {}
