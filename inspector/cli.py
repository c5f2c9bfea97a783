"""The ``onnx-inspector`` command: one subcommand per module of ``inspector.commands``, and a bare ``MODEL`` to
open the app.

No Qt is imported unless the app is opened. Errors print one line and exit with code 2.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import re
import sys
from collections.abc import Callable, Sequence

from inspector.core.util import deferred, onnxpkg

# The command owns its process: onnx's protobuf classes now, the rest of the onnx package when something asks for
# it. Every command reads models through those classes, and one that needs no more of onnx skips 0.2-0.3 s of its
# import (core/util/onnxpkg.py). A program that imports the Python API keeps the onnx package as it imports it.
onnxpkg.install()
# ... and ``inspect`` and ``copy`` when something uses them: ``dataclasses`` imports ``inspect`` for the doc of a class
# without a docstring (ours have theirs: tests/test_startup.py), and with ``dis`` and ``tokenize`` it was 20 of the 402
# million instructions of ``onnx-inspector summary`` on a 15-node export (callgrind, core/util/deferred.py); it imports
# ``copy`` (with ``weakref``: 3 million) for ``asdict`` and ``astuple``, which a command does not call
deferred.defer("inspect")
deferred.defer("copy")

from inspector import __version__  # noqa: E402
from inspector.core.util.errors import InspectorError  # noqa: E402
from inspector.core.util.textsafe import one_line  # noqa: E402

SUBCOMMANDS = {
    "summary": "inspector.commands.summary",
    "fold": "inspector.commands.fold",
    "diff": "inspector.commands.diff",
    "report": "inspector.commands.report",
    "check": "inspector.commands.check",
    "open": "inspector.commands.gui",
}
USAGE = f"""usage: onnx-inspector [MODEL [OTHER]]          open the desktop app
       onnx-inspector summary MODEL [--json]     model facts, families, aten calls, specialised values
       onnx-inspector fold MODEL -o OUT [--domain D] [--check]
                                                 make each aten call of a flat export a function call
       onnx-inspector diff A B [--format text|md|json|html] [-o FILE] [--jobs N]
                                                 structural diff of two models, or of every export of two
                                                 folders paired by relative path (exit 0 equal, 1 differ)
       onnx-inspector report MODEL [--compare OTHER] [--format html|md|json|pdf] -o FILE   annotated report
       onnx-inspector check MODEL [--reviews FILE] [--format text|json|github]
                                                 reviews in CI (exit 0 all reviewed ok, 1 open or changed items)
       onnx-inspector open [MODEL [OTHER]]       same as the first form
       onnx-inspector --version

ONNX Inspector {__version__}: review ONNX models exported from PyTorch.
"""


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("-h", "--help", "help"):
        sys.stdout.write(USAGE)
        return 0
    if args and args[0] == "--version":
        sys.stdout.write(f"onnx-inspector {__version__}\n")
        return 0
    if args and args[0] in SUBCOMMANDS:
        module, rest = SUBCOMMANDS[args[0]], args[1:]
    elif args and _mistyped(args[0]):
        return run_guarded(_unknown_command, args[:1])
    else:
        module, rest = SUBCOMMANDS["open"], args
    command: Callable[[Sequence[str]], int] = importlib.import_module(module).main
    return run_guarded(command, rest)


# words users type for a subcommand that has another name
_MEANT = {"gui": "open", "app": "open", "view": "open", "show": "open", "compare": "diff", "summarize": "summary",
          "info": "summary", "html": "report"}


def _mistyped(word: str) -> bool:
    """Whether a first argument that is not a subcommand reads as a mistyped one rather than a model to open: a bare
    word (no path separator, no suffix) that names no file here. ``onnx-inspector gui model.onnx`` otherwise opened
    a comparison of a model named "gui" with ``model.onnx``."""
    return re.fullmatch(r"[A-Za-z][A-Za-z_-]*", word) is not None and not os.path.exists(word)


def _unknown_command(argv: Sequence[str]) -> int:
    import difflib  # only for a mistyped command (start-up: 3 ms of every command)

    word = argv[0]
    meant = _MEANT.get(word.lower()) or next(iter(difflib.get_close_matches(word.lower(), SUBCOMMANDS, 1)), None)
    hint = f"; did you mean '{meant}'?" if meant else ""
    raise InspectorError(f"unknown command {word!r} and no such file{hint} (commands: {', '.join(SUBCOMMANDS)}; "
                         "onnx-inspector --help lists them)")


def run_guarded(command: Callable[[Sequence[str]], int], argv: Sequence[str]) -> int:
    """Run a subcommand; turn every failure into one line on stderr and exit code 2."""
    try:
        return command(argv)
    except SystemExit as e:  # argparse: usage errors are already one line
        return e.code if isinstance(e.code, int) else 2
    except InspectorError as e:
        _error(str(e))
    except KeyboardInterrupt:
        _error("interrupted")
    except BrokenPipeError:
        return 0
    except Exception as e:
        if os.environ.get("INSPECTOR_DEBUG"):
            raise
        _error(f"internal error: {type(e).__name__}: {' '.join(str(e).split())[:300]}")
    return 2


def _error(message: str) -> None:
    """The one error line: a path or a model's text in it is shown with its control characters escaped (a name
    like ``$'\\e[2Jnope.onnx'`` must not clear the screen) and its line breaks as ⏎."""
    sys.stderr.write(f"onnx-inspector: error: {one_line(message)}\n")


def entry() -> None:
    """The console script: a subcommand ends the process once its output is written and flushed, without freeing
    what it built (``inspector.commands``); the app ends as Qt ends it (its settings and reviews are saved on the
    way out)."""
    args = sys.argv[1:]
    if not args or args[0] not in SUBCOMMANDS or args[0] == "open":
        sys.exit(main(args))
    from inspector import commands

    commands.leave_to_exit()
    code = main(args)
    for stream in (sys.stdout, sys.stderr):
        # (a reader that went away, or a closed stream: nothing more can be said there)
        with contextlib.suppress(BrokenPipeError, OSError, ValueError):
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    entry()
