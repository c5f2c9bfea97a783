"""The ``onnx`` package with its protobuf classes ready at once and everything else on first use: start-up.

Every command reads a model through the classes of ``onnx/onnx_ml_pb2.py`` (``ModelProto``, ``NodeProto``, ...),
which import in about 25 ms. ``import onnx`` costs 0.20-0.30 s more on this VM (``python -X importtime -c "import
onnx"``): its ``__init__`` imports numpy (0.05-0.14 s), ``onnx.helper``, ``compose``, the checker, shape inference,
the version converter and the reference's helpers, which a summary, a check or a diff never call. A command that
paid it every time (a CI gate, a pre-commit hook, a shell loop over exports, each worker of a folder diff) paid
more for onnx's start-up than for the model.

``install()`` (run by the command line, ``inspector/cli.py``, which owns its process, before any module of the core
imports onnx) registers the ``onnx`` package in ``sys.modules`` with only its protobuf message classes set, the very
objects onnx's own ``__init__`` exports, and runs that ``__init__`` the first time anything asks the package for a
name it does not have yet (``onnx.load``, ``onnx.helper``, ``from onnx import numpy_helper``, ``onnx.__version__``):
whoever needs the rest of onnx gets the real package, completed in place, with the same classes. A program that
imports the Python API is left alone (its own ``import onnx`` runs as always), and one that imported onnx before
the command line keeps its package untouched. Nothing here reads a model: it changes when onnx's import work is
done, not what is parsed.
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


def install() -> None:
    """Register ``onnx`` with its protobuf classes only (see the module doc); nothing when it is imported already,
    or when its layout is not the one expected (the plain ``import onnx`` then happens as before)."""
    if "onnx" in sys.modules:
        return
    with _lock:
        if "onnx" in sys.modules:
            return
        spec = importlib.util.find_spec("onnx")
        if spec is None or spec.loader is None or not spec.submodule_search_locations:
            return
        package = importlib.util.module_from_spec(spec)
        sys.modules["onnx"] = package
        try:
            pb2 = importlib.import_module("onnx.onnx_ml_pb2")
        except Exception:  # not the onnx this was written for: let the real import run, and say why there
            del sys.modules["onnx"]
            sys.modules.pop("onnx.onnx_ml_pb2", None)
            return
        for name, value in vars(pb2).items():
            if isinstance(value, type) and not name.startswith("_"):  # the message classes onnx exports
                setattr(package, name, value)
        vars(package)["__getattr__"] = _completer(package, spec)  # PEP 562: asked for any name not set


def is_complete() -> bool:
    """Whether onnx's own ``__init__`` has run in this process (tests: a command that needs no more than the
    protobuf classes must not have run it)."""
    package = sys.modules.get("onnx")
    return package is not None and "__getattr__" not in vars(package)


def _completer(package: types.ModuleType, spec: Any) -> Any:
    def __getattr__(name: str) -> Any:
        if name.startswith("__") and name not in ("__version__", "__all__"):
            raise AttributeError(name)  # dunder probes (copy, pickle, inspect) do not need onnx's rest
        with _lock:
            if getattr(_completing, "active", False):  # onnx's own __init__ asking for a name it sets later
                raise AttributeError(f"partially initialized module 'onnx' has no attribute {name!r}")
            if "__getattr__" in vars(package):
                _completing.active = True
                try:
                    spec.loader.exec_module(package)
                finally:
                    _completing.active = False
                    vars(package).pop("__getattr__", None)
        return getattr(package, name)

    return __getattr__
