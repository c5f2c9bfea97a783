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
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import cache

import jinja2
from markupsafe import Markup

from inspector.core.util.textsafe import html_text, one_line
from inspector.core.util.units import human_size

__all__ = ["Markup", "template_environment"]


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


@cache
def template_environment(keep_newlines: bool = True) -> jinja2.Environment:
    """The page templates, autoescaped through ``textsafe.html_text`` (newlines kept as they are, or shown)."""
    env = jinja2.Environment(loader=jinja2.PackageLoader("inspector.report", "templates"), autoescape=True,
                             finalize=_finalize(keep_newlines), undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True)
    env.filters.update(join=_join, num=lambda n: f"{n:,}", size=human_size,
                       line=lambda text, width=0: one_line(str(text), width))
    return env
