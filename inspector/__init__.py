"""ONNX Inspector: review ONNX models exported from PyTorch.

The public Python API is ``__all__``: open (load and index) a model, summarise it, fold a flat export, diff two
models. Names are imported on first use, so ``import inspector`` stays cheap (no onnx until it is needed)::

    import inspector
    index = inspector.open_index("model.onnx")
    data = inspector.summary_dict(index)              # the `summary --json` object
    folded, report = inspector.fold_model(index)
    diff = inspector.diff_files("a.onnx", "b.onnx")   # inspector.diff_dict(diff) is the `diff --format json` object
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_API = {
    "InspectorError": "inspector.core.errors",
    "load_model": "inspector.core.loader",
    "LoadedModel": "inspector.core.loader",
    "open_index": "inspector.core.index",
    "build_index": "inspector.core.index",
    "ModelIndex": "inspector.core.index",
    "summary_dict": "inspector.core.summary",
    "summary_text": "inspector.core.summary",
    "fold_model": "inspector.core.fold",
    "FoldReport": "inspector.core.fold",
    "diff_files": "inspector.core.diff",
    "diff_models": "inspector.core.diff",
    "diff_dict": "inspector.core.diff",
    "ModelDiff": "inspector.core.diff",
}

__all__ = [
    "FoldReport", "InspectorError", "LoadedModel", "ModelDiff", "ModelIndex", "__version__", "build_index",
    "diff_dict", "diff_files", "diff_models", "fold_model", "load_model", "open_index", "summary_dict",
    "summary_text",
]

if TYPE_CHECKING:
    from inspector.core.diff import ModelDiff, diff_dict, diff_files, diff_models
    from inspector.core.errors import InspectorError
    from inspector.core.fold import FoldReport, fold_model
    from inspector.core.index import ModelIndex, build_index, open_index
    from inspector.core.loader import LoadedModel, load_model
    from inspector.core.summary import summary_dict, summary_text


def __getattr__(name: str) -> Any:
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'inspector' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
