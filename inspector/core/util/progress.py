"""Checkpoints for long work: how a caller follows it and stops it.

Loading a large model and building search tables take seconds on a 100k-node export. Such work accepts an optional
``progress`` callable, called between the steps of the work with (steps done, steps in all) in the work's own unit
(bytes, nodes). A caller shows progress with it, runs other work of its own between the steps, or stops the work by
raising from it: the exception reaches the caller unchanged. Without ``progress`` the work runs in one go.
"""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[int, int], None]  # (done, total); may raise to stop the work
