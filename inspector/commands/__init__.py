"""Subcommands of ``onnx-inspector``; each module has ``main(argv) -> int`` and is argument parsing over the Python
API (``inspector.api``): the API is the one place where core and report are wired together.

A subcommand run by the console script (``inspector.cli.entry``) ends the process as soon as its output is
written; ``leave_to_exit`` tells the API so (see ``inspector.api``: what it builds is then left to the operating
system, and the cyclic collector is off).

The parsers' help formatters (``HelpFormatter``, ``RawDescriptionHelpFormatter``) are argparse's, made when they
format: argparse makes one per ``add_argument`` only to check the argument's metavar, and each asked the terminal's
width through ``shutil``, whose import (with ``bz2``, ``lzma`` and ``zlib``) was 6 of the 382 million instructions
of ``onnx-inspector summary`` on a 15-node export (callgrind). The help and usage texts are argparse's own.
"""

from __future__ import annotations

import argparse
from typing import Any

from inspector.api import keep, kept, leave_to_exit

__all__ = ["HelpFormatter", "RawDescriptionHelpFormatter", "keep", "kept", "leave_to_exit"]


class _MadeWhenFormatting:
    """argparse's formatter, initialised (terminal width and all) on first use of anything its ``__init__`` sets.
    Checking a metavar (``_format_args``) reads only the action, so ``add_argument`` never initialises one."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        self._made_with = (prog, indent_increment, max_help_position, width)

    def _format_text(self, text: str) -> str:
        """A description (the command module's docstring) as a terminal shows it: its literals plain, without the
        docstring's double backquotes (``report --help`` read them around every option it named)."""
        return super()._format_text(text.replace("``", ""))  # type: ignore[misc]

    def __getattr__(self, name: str) -> Any:  # only for names not set yet: argparse's formatter's own
        made_with = self.__dict__.pop("_made_with", None)
        if made_with is None:
            raise AttributeError(name)
        super().__init__(*made_with)
        return getattr(self, name)


class HelpFormatter(_MadeWhenFormatting, argparse.HelpFormatter):
    """argparse's default help formatter, made when it formats."""


class RawDescriptionHelpFormatter(_MadeWhenFormatting, argparse.RawDescriptionHelpFormatter):
    """argparse's formatter that keeps the description's line breaks, made when it formats."""
