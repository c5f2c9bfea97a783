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
whoever needs the rest of onnx gets the real package, completed in place, with the same classes. On protobuf's
default backend (upb) the classes are made from ``onnx_ml_pb2``'s file descriptor without running that module, which
would import protobuf's pure-Python layer too (``_upb_classes``). A program that
imports the Python API is left alone (its own ``import onnx`` runs as always), and one that imported onnx before
the command line keeps its package untouched. Nothing here reads a model: it changes when onnx's import work is
done, not what is parsed.
"""

from __future__ import annotations

import _thread
import contextlib
import importlib.machinery
import importlib.util
import os
import sys
import types
from typing import Any

from inspector.core.util import deferred

# (_thread, not threading: importing threading is a millisecond of start-up this module does not need)
_lock = _thread.RLock()
PB2 = "onnx.onnx_ml_pb2"
PB2_FILE = b"\n\x12onnx/onnx-ml.proto"  # a FileDescriptorProto's first field: its name


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
        classes = _upb_classes(spec.submodule_search_locations[0])
        if classes is None:
            try:
                pb2 = importlib.import_module(PB2)
            except Exception:  # not the onnx this was written for: let the real import run, and say why there
                del sys.modules["onnx"]
                sys.modules.pop(PB2, None)
                return
            classes = {name: value for name, value in vars(pb2).items()
                       if isinstance(value, type) and not name.startswith("_")}  # the message classes onnx exports
        for name, value in classes.items():
            setattr(package, name, value)
        # PEP 562: asked for any name not set (``onnx.__version__`` and ``onnx.__all__`` too), onnx's code runs
        deferred.complete_on_first_use(package, spec, public=("__version__", "__all__"))


def _upb_classes(folder: str) -> dict[str, type] | None:
    """The message classes of ``onnx_ml_pb2``, made as its own code makes them but on protobuf's upb extension
    directly: its serialized file descriptor (a constant of the module's cached bytecode) added to the default pool,
    a class per message by upb's metaclass. None when protobuf does not run on upb or anything differs from that
    layout (the module is then imported as it is).

    Why: ``onnx_ml_pb2`` imports protobuf's Python layer (``descriptor_pool``, ``builder``, ``symbol_database``),
    which imports its pure-Python message implementation, ``text_format``, the decoder and encoder, ``pickle`` and
    ``descriptor_database``, none of which run on upb: ``onnx-inspector summary`` on a 15-node export went from 530
    to 503 million instructions (callgrind; ``python -c "import onnx"`` is 638 million). upb keeps one class per
    message descriptor, so the module's own code, run later by onnx's ``__init__``, adds the same file again (an
    equal file is accepted) and gets these very classes (tests/test_startup.py)."""
    if os.environ.get("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "upb") != "upb":
        return None
    try:
        from google._upb import _message as upb
        from google.protobuf.message import Message

        if importlib.util.find_spec("google.protobuf.internal._api_implementation") is not None:
            return None  # protobuf built to choose another implementation
        path = os.path.join(folder, "onnx_ml_pb2.py")
        code = importlib.machinery.SourceFileLoader(PB2, path).get_code(PB2)
        consts = code.co_consts if code is not None else ()
        files = [c for c in consts if isinstance(c, bytes) and c.startswith(PB2_FILE)]
        if len(files) != 1:
            return None
        messages = upb.default_pool.AddSerializedFile(files[0]).message_types_by_name
        bases = _well_known_bases_later()
        try:
            return {name: _message_class(upb.MessageMeta, Message, desc, "") for name, desc in messages.items()}
        finally:
            if bases is not None:
                del sys.modules[WELL_KNOWN]
                sys.meta_path.insert(0, _WellKnownBases(bases))
    except Exception:
        return None


WELL_KNOWN = "google.protobuf.internal.well_known_types"
# protobuf's Python modules through which a program makes message classes: a ``*_pb2`` module's builder (with the
# pure-Python implementation) and the message factory (``reflection`` and ``symbol_database`` import it)
_CLASS_MAKERS = ("google.protobuf.internal.builder", "google.protobuf.internal.python_message",
                 "google.protobuf.message_factory")


def _well_known_bases_later() -> dict[str, type] | None:
    """An empty table of the well-known types' Python bases, given to upb for onnx's classes in place of
    ``well_known_types``'s, and filled from that module before the first class of anyone else is made
    (``_WellKnownBases``); None, and the module imported as always, when protobuf's class makers are imported already.

    Why: upb imports ``well_known_types`` when it makes its first class of any kind, to give ``Timestamp``,
    ``Duration``, ``Any``, ``Struct``... their Python methods, and keeps its ``WKTBASES`` table for the process. That
    import (``datetime``, ``calendar``, ``locale``, protobuf's ``descriptor`` and ``field_mask``) was 20 of the 376
    million instructions of ``onnx-inspector summary`` on a 15-node export (callgrind), for a table onnx's messages,
    none of them a well-known type, never read."""
    if WELL_KNOWN in sys.modules or any(name in sys.modules for name in _CLASS_MAKERS):
        return None
    placeholder = types.ModuleType(WELL_KNOWN)
    bases: dict[str, type] = {}
    placeholder.WKTBASES = bases  # type: ignore[attr-defined]
    sys.modules[WELL_KNOWN] = placeholder
    return bases


class _WellKnownBases:
    """A meta path finder that, on the first import of a class maker (``_CLASS_MAKERS``), imports
    ``well_known_types`` and fills upb's table with its bases, then leaves ``sys.meta_path``: a well-known type's class
    made afterwards (``timestamp_pb2``, a message factory) gets its Python methods as it always did."""

    def __init__(self, bases: dict[str, type]) -> None:
        self.bases = bases

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name in _CLASS_MAKERS:
            with contextlib.suppress(ValueError):
                sys.meta_path.remove(self)
            self.bases.update(importlib.import_module(WELL_KNOWN).WKTBASES)
        return None  # the module is found by the finders after this one, as always


def _message_class(meta: Any, base: type, desc: Any, prefix: str) -> type:
    """One message class with its nested ones, as protobuf's ``builder._BuildMessage`` makes it."""
    body: dict[str, Any] = {name: _message_class(meta, base, nested, f"{prefix}{desc.name}.")
                            for name, nested in desc.nested_types_by_name.items()}
    body.update(DESCRIPTOR=desc, __module__=PB2, __qualname__=prefix + desc.name)
    made: type = meta(desc.name, (base,), body)
    return made


def is_complete() -> bool:
    """Whether onnx's own ``__init__`` has run in this process (tests: a command that needs no more than the
    protobuf classes must not have run it)."""
    return deferred.is_complete("onnx")
