"""Subcommands of ``onnx-inspector``; each module has ``main(argv) -> int`` and is argument parsing over the Python
API (``inspector.api``): the API is the one place where core and report are wired together.

A subcommand run by the console script (``inspector.cli.entry``) ends the process as soon as its output is
written; ``leave_to_exit`` tells the API so (see ``inspector.api``: what it builds is then left to the operating
system, and the cyclic collector is off).
"""

from __future__ import annotations

from inspector.api import keep, kept, leave_to_exit

__all__ = ["keep", "kept", "leave_to_exit"]
