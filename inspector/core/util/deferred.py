"""Modules registered now and executed in place on first use of one of their names: start-up of a command.

A command of ``onnx-inspector`` owns its process (``inspector/cli.py``). Imports it pays for and rarely uses are
registered here instead of executed: the rest of the ``onnx`` package (``onnxpkg``), and the standard library's
``inspect`` and ``copy``, which ``dataclasses`` imports for calls a command never makes (the doc of a dataclass without
a docstring; ``asdict`` and ``astuple``). The module object is the one every later ``import`` gets; its code runs, in
place, the first time anything asks it for a name it does not have yet (PEP 562's module ``__getattr__``), so whoever
needs it gets the real module, complete. ``importlib.util.LazyLoader`` does not serve on Python 3.11: ``import inspect``
itself reads the module's ``__spec__`` through the lazy module's ``__getattribute__``, which executes it at once.
"""

from __future__ import annotations

import _thread
import importlib.util
import sys
import types
from typing import Any

# (_thread, not threading: importing threading is a millisecond of start-up this module does not need)
_lock = _thread.RLock()
_completing = _thread._local()


def defer(name: str) -> None:
    """Register module ``name`` to be executed on first use; nothing when it is imported already or not found."""
    if name in sys.modules:
        return
    with _lock:
        if name in sys.modules:
            return
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return
        module = importlib.util.module_from_spec(spec)
        complete_on_first_use(module, spec)
        sys.modules[name] = module


def complete_on_first_use(module: types.ModuleType, spec: Any, public: tuple[str, ...] = ()) -> None:
    """Give ``module`` (made from ``spec``, its code not run) a module ``__getattr__`` that runs its code in place
    when it is asked for a name it does not have. Dunder probes (``copy``, ``pickle``, ``inspect`` asking for
    ``__wrapped__`` and the like) are answered without running it, except the dunders named in ``public``."""

    def __getattr__(name: str) -> Any:
        if name.startswith("__") and name not in public:
            raise AttributeError(name)
        with _lock:
            running: set[str] = getattr(_completing, "names", set())
            if module.__name__ in running:  # the module's own code asking for a name it sets later
                raise AttributeError(f"partially initialized module {module.__name__!r} has no attribute {name!r}")
            if vars(module).get("__getattr__") is __getattr__:
                _completing.names = running | {module.__name__}
                try:
                    spec.loader.exec_module(module)
                finally:
                    _completing.names = running
                    if vars(module).get("__getattr__") is __getattr__:  # (not one the module's code defines)
                        del vars(module)["__getattr__"]
        return getattr(module, name)

    __getattr__.deferred = True  # type: ignore[attr-defined]
    vars(module)["__getattr__"] = __getattr__


def is_complete(name: str) -> bool:
    """Whether module ``name`` is imported and its code has run (not waiting for a first use)."""
    module = sys.modules.get(name)
    return module is not None and not getattr(vars(module).get("__getattr__"), "deferred", False)
