"""The Jinja2 environment of every HTML page the tool writes (report, diff, folder diff): templates shipped as package
data (``inspector/report/templates``), autoescape on.

The threat is the model file: its names, doc strings, metadata, values and paths may hold markup, control and bidi
characters, and URLs. Autoescape makes escaping the default instead of something each f-string had to remember:
every ``{{ }}`` goes through ``finalize``, which hands it to the one HTML escaper,
``inspector.core.util.textsafe.html_text`` (control and bidi characters made visible, then ``& < > " ' =`` as
entities, ``://`` as ``&#58;//`` so that a page holds no URL). Only ``Markup`` made by the writers passes unchanged
(CSS, inline SVG from ``to_svg``, a page section rendered by another template). Jinja's own ``join`` would escape
with markupsafe instead, so it is replaced by one that leaves the escaping to ``finalize``.

The report shows newlines of model text as they are (doc strings in ``<pre>``); the diff pages show them as a
visible ``\\x0a``, one line per value: each has its environment (``keep_newlines``).

Compiling the templates from their sources took 0.06-0.16 s of every report (Jinja's parser and code generator,
cProfile at 100k nodes), so the Python code Jinja makes of each template ships precompiled in
``templates/compiled.json`` (written by ``scripts/gen_page_templates.py``; a test fails when it is stale). Only
what Jinja itself would compile is taken from there: an entry is used when the template source's checksum and the
Jinja version are those it was made from, else the template is compiled from its source as before. Both
environments compile to the same code (their settings differ only in what ``finalize`` does, not in whether
there is one); autoescape is in the compiled code as it is in Jinja's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, MutableMapping
from functools import cache
from importlib.resources import files
from typing import Any

import jinja2
from jinja2.bccache import Bucket
from markupsafe import Markup

from inspector.core.util.textsafe import html_text, one_line
from inspector.core.util.units import arrowed, human_size, plural

__all__ = ["COMPILED", "Markup", "compile_templates", "template_environment"]

COMPILED = "compiled.json"  # in the templates folder


def _finalize(keep_newlines: bool) -> Callable[[object], object]:
    def finalize(value: object) -> object:
        """Every ``{{ }}``: text through the one HTML escaper; ``Markup`` made by a writer as it is."""
        if isinstance(value, Markup):
            return value
        return Markup(html_text("" if value is None else value, keep_newlines=keep_newlines))

    return finalize


def _join(items: Iterable[object], sep: str = "") -> str:
    """Plain text joined; ``finalize`` escapes the result (Jinja's ``join`` would escape with markupsafe)."""
    return sep.join(str(x) for x in items)


class _Precompiled(jinja2.BytecodeCache):
    """Jinja's bytecode cache hook, read only: a template's code is the shipped Python source Jinja made of it,
    when made from this very source by this Jinja version (else Jinja compiles the source, and nothing is written)."""

    def __init__(self, entries: MutableMapping[str, Any]) -> None:
        self.entries = entries

    def get_bucket(self, environment: jinja2.Environment, name: str, filename: str | None, source: str) -> Bucket:
        checksum = self.get_source_checksum(source)
        bucket = Bucket(environment, name, checksum)
        entry = self.entries.get(name)
        if entry is not None and entry["checksum"] == checksum:
            bucket.code = compile(entry["code"], filename or name, "exec")  # as Environment._compile does
        return bucket

    def load_bytecode(self, bucket: Bucket) -> None:  # (get_bucket reads the entries itself)
        pass

    def dump_bytecode(self, bucket: Bucket) -> None:  # (package data is never written)
        pass


def _shipped() -> dict[str, Any]:
    """The precompiled templates, if made by this Jinja version."""
    try:
        data = json.loads(files("inspector.report").joinpath("templates").joinpath(COMPILED).read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("jinja2") != jinja2.__version__:
        return {}
    return dict(data.get("templates", {}))


def _environment(keep_newlines: bool, precompiled: bool) -> jinja2.Environment:
    shipped = _Precompiled(_shipped()) if precompiled else None
    env = jinja2.Environment(loader=jinja2.PackageLoader("inspector.report", "templates"), autoescape=True,
                             finalize=_finalize(keep_newlines), undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True, bytecode_cache=shipped)
    env.filters.update(join=_join, num=lambda n: f"{n:,}", size=human_size, plural=plural, arrowed=arrowed,
                       line=lambda text, width=0: one_line(str(text), width))
    return env


@cache
def template_environment(keep_newlines: bool = True) -> jinja2.Environment:
    """The page templates, autoescaped through ``textsafe.html_text`` (newlines kept as they are, or shown)."""
    return _environment(keep_newlines, precompiled=True)


def compile_templates() -> dict[str, Any]:
    """What ``templates/compiled.json`` holds: for each template, the Python source Jinja makes of it in the
    report's environment, with the checksum of the template source it was made from."""
    env = _environment(keep_newlines=True, precompiled=False)
    assert env.loader is not None
    out: dict[str, Any] = {}
    for name in env.list_templates():
        if name == COMPILED:
            continue
        source, filename, _ = env.loader.get_source(env, name)
        out[name] = {"checksum": _Precompiled({}).get_source_checksum(source),
                     "code": env.compile(source, name, filename, raw=True)}
    return {"jinja2": jinja2.__version__, "templates": out}
