"""ONNX Inspector: review ONNX models exported from PyTorch.

The public Python API is ``__all__``. Names are imported on first use, so ``import inspector`` stays cheap (no
onnx, no Qt until they are needed)::

    import inspector
    program = torch.onnx.export(model, args, dynamo=True)
    m = inspector.open(program)                       # or a path, or an onnx.ModelProto
    inspector.report(m, format="html").save("report.html")
    inspector.diff("before.onnx", program)            # a Diff; two folders give a FolderDiff
    inspector.check(program, reviews="before.onnx.review.json").passed
    inspector.fold("export.onnx", "folded.onnx")     # each aten call a local function call
    inspector.show(program)                           # the desktop app

The lower-level calls stay available: ``open_index``, ``summary_dict``, ``fold_model``, ``diff_files``, …
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_API = {
    "open": "inspector.api",
    "diff": "inspector.api",
    "check": "inspector.api",
    "fold": "inspector.api",
    "show": "inspector.api",
    "Model": "inspector.api",
    "Report": "inspector.api",
    "Diff": "inspector.api",
    "FolderDiff": "inspector.api",
    "CheckReport": "inspector.api",
    "InspectorError": "inspector.core.util.errors",
    "load_model": "inspector.core.model.loader",
    "LoadedModel": "inspector.core.model.loader",
    "open_index": "inspector.core.model.index",
    "build_index": "inspector.core.model.index",
    "ModelIndex": "inspector.core.model.index",
    "summary_dict": "inspector.core.summary",
    "summary_text": "inspector.core.summary",
    "fold_model": "inspector.core.fold.aten_fold",
    "FoldReport": "inspector.core.fold.aten_fold",
    "diff_files": "inspector.core.diff",
    "diff_models": "inspector.core.diff",
    "diff_dict": "inspector.core.diff",
    "ModelDiff": "inspector.core.diff",
}

__all__ = [
    "CheckReport", "Diff", "FoldReport", "FolderDiff", "InspectorError", "LoadedModel", "Model", "ModelDiff",
    "ModelIndex", "Report", "__version__", "build_index", "check", "diff", "diff_dict", "diff_files", "diff_models",
    "fold", "fold_model", "load_model", "open", "open_index", "report", "show", "summary_dict", "summary_text",
]

if TYPE_CHECKING:
    from inspector.api import CheckReport, Diff, FolderDiff, Model, Report, check, diff, fold, open, report, show
    from inspector.core.diff import ModelDiff, diff_dict, diff_files, diff_models
    from inspector.core.fold.aten_fold import FoldReport, fold_model
    from inspector.core.model.index import ModelIndex, build_index, open_index
    from inspector.core.model.loader import LoadedModel, load_model
    from inspector.core.summary import summary_dict, summary_text
    from inspector.core.util.errors import InspectorError


class _ReportPackage(types.ModuleType):
    """``inspector.report`` is the package of report writers, and also the API call ``inspector.report(model,
    format=...)``: calling the package calls ``inspector.api.report``. (A plain function could not have the name:
    importing any ``inspector.report.*`` module sets the package as the attribute.)"""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from inspector.api import report

        return report(*args, **kwargs)


class _Package(types.ModuleType):
    """This package's module type: it makes the ``inspector.report`` subpackage callable when it is imported."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "report" and type(value) is types.ModuleType:
            value.__class__ = _ReportPackage
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    if name == "report":  # the subpackage, made callable as it is imported (see _ReportPackage)
        return importlib.import_module("inspector.report")
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'inspector' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
