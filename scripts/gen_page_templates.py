"""Write ``inspector/report/templates/compiled.json``: the Python code Jinja makes of each page template, so that a
report does not parse and compile its templates on every run (``inspector.report.templating``). Run it after
editing a template (``tests/test_templates_compiled.py`` fails until then) or upgrading Jinja2."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from inspector.report.templating import COMPILED, compile_templates

OUT = Path(__file__).resolve().parents[1] / "inspector" / "report" / "templates" / COMPILED


def main() -> int:
    data = compile_templates()
    OUT.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{len(data['templates'])} templates compiled into {OUT.name} (Jinja2 {data['jinja2']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
