"""The Python API for torch users and notebooks: ``inspector.open``, ``diff``, ``report``, ``check``, ``show``.

Each takes a model as a path, an ``onnx.ModelProto``, anything with a ``.model_proto`` (a
``torch.onnx.ONNXProgram``: duck-typed, so torch is never imported), or an already opened ``Model``::

    program = torch.onnx.export(model, args, dynamo=True)
    m = inspector.open(program)
    m.summary()["families"]
    inspector.report(m, format="md").save("export.md")
    inspector.diff("old.onnx", program)                     # renders as HTML in Jupyter
    inspector.check(program, reviews="old.onnx.review.json").passed

Results render as HTML in Jupyter (``_repr_html_``: the same page the CLI writes, shown in a sandboxed frame, so
neither its styles nor anything from the model reach the notebook), have ``.text`` and ``.save(path)``.
``show`` opens the desktop app (PySide6 is imported only then).
"""

from __future__ import annotations

import importlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inspector.core.util.errors import InspectorError

if TYPE_CHECKING:
    import onnx

    from inspector.core.diff import ModelDiff
    from inspector.core.diff.folders import DirDiff
    from inspector.core.fold.aten_fold import FoldReport
    from inspector.core.fold.modules import ModuleFoldReport
    from inspector.core.model.index import Family, ModelIndex
    from inspector.core.review.check import CheckItem, CheckResult
    from inspector.core.review.store import ReviewStore

__all__ = ["CheckReport", "Diff", "FolderDiff", "Model", "Report", "check", "diff", "fold", "open", "report", "show"]

IN_MEMORY = "<in memory>.onnx"  # the path an in-memory model is known by (never read or written)
FRAME_HEIGHT = 600  # pixels of a result's frame in a notebook


class Model:
    """An opened model: its index (``.index``), with summary and shortcuts to the other calls."""

    def __init__(self, index: ModelIndex, in_memory: bool = False) -> None:
        self.index = index
        self.in_memory = in_memory  # opened from a ModelProto or an ONNXProgram, not from a file

    @property
    def path(self) -> Path | None:
        """The model's file, ``None`` for a model opened from memory."""
        return None if self.in_memory else self.index.path

    @property
    def proto(self) -> onnx.ModelProto:
        return self.index.proto

    @property
    def families(self) -> list[Family]:
        """Local-function families and aten call families, as the app's Functions tree lists them."""
        return self.index.families

    def summary(self) -> dict[str, Any]:
        """The ``onnx-inspector summary --json`` object."""
        from inspector.core.summary import summary_dict

        return summary_dict(self.index)

    def report(self, format: str = "html", compare: Any = None, reviews: Any = None) -> Report:
        return report(self, format=format, compare=compare, reviews=reviews)

    def check(self, reviews: Any = None) -> CheckReport:
        return check(self, reviews=reviews)

    def diff(self, other: Any) -> Diff:
        result = diff(self, other)
        assert isinstance(result, Diff)
        return result

    def show(self) -> int:
        return show(self)

    def __repr__(self) -> str:
        f = self.index.facts
        where = "in memory" if self.in_memory else str(self.index.path)
        return (f"<inspector.Model {where}: {f.main_nodes} nodes, {len(self.index.families)} families, "
                f"{f.function_count} local functions>")


class _Rendered:
    """A result with several text formats: ``.text`` (the default one), ``render(format)``, ``save(path)``."""

    def __init__(self, formats: tuple[str, ...], suffixes: dict[str, str], default_format: str = "text") -> None:
        self.formats, self.suffixes, self.default_format = formats, suffixes, default_format

    def render(self, format: str | None = None) -> str:
        fmt = format or self.default_format
        if fmt not in self.formats:
            raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(self.formats)}")
        return self._render(fmt)

    def _render(self, fmt: str) -> str:
        raise NotImplementedError

    @property
    def text(self) -> str:
        return self.render()

    def save(self, path: str | os.PathLike[str], format: str | None = None) -> Path:
        """Write the result to ``path`` atomically, in ``format`` (default: from the suffix, else ``.text``'s)."""
        from inspector.core.util.fileio import write_atomic

        target = Path(path)
        fmt = format or self.suffixes.get(target.suffix.lower(), self.default_format)
        write_atomic(target, self.render(fmt).encode("utf-8"), make_parents=True)
        return target

    def _repr_html_(self) -> str:
        if "html" in self.formats:
            return framed(self.render("html"))
        from inspector.core.util.textsafe import html_text

        return f"<pre>{html_text(self.render('text'), keep_newlines=True)}</pre>"

    def __str__(self) -> str:
        return self.render("text") if "text" in self.formats else self.text


def framed(page: str, height: int = FRAME_HEIGHT) -> str:
    """A whole HTML page shown inside a notebook: a sandboxed ``iframe`` (no scripts, its own styles)."""
    from inspector.core.util.textsafe import html_text

    return (f'<iframe sandbox srcdoc="{html_text(page, keep_newlines=True)}" '
            f'style="width: 100%; height: {height}px; border: 1px solid #8884"></iframe>')


class Report(_Rendered):
    """An annotated report (``onnx-inspector report``) in one format."""

    def __init__(self, text: str, format: str) -> None:
        super().__init__((format,), {f".{format}": format}, format)
        self._text, self.format = text, format

    def _render(self, fmt: str) -> str:
        return self._text

    def _repr_html_(self) -> str:
        if self.format == "html":
            return framed(self._text)
        from inspector.core.util.textsafe import html_text

        return f"<pre>{html_text(self._text, keep_newlines=True)}</pre>"

    def __repr__(self) -> str:
        return f"<inspector.Report {self.format}, {len(self._text):,} characters>"


class Diff(_Rendered):
    """The structural diff of two models (``onnx-inspector diff A B``); ``.diff`` is the ``ModelDiff``."""

    def __init__(self, d: ModelDiff) -> None:
        from inspector.report.diff_render import DIFF_FORMATS, DIFF_SUFFIXES

        super().__init__(DIFF_FORMATS, DIFF_SUFFIXES)
        self.diff = d

    @property
    def equal(self) -> bool:
        return self.diff.equal

    @property
    def equivalent(self) -> bool:
        return self.diff.equivalent

    def to_dict(self) -> dict[str, Any]:
        """The ``diff --format json`` object."""
        from inspector.core.diff import diff_dict

        return diff_dict(self.diff)

    def _render(self, fmt: str) -> str:
        from inspector.report.diff_render import render_diff

        return render_diff(self.diff, fmt)

    def __repr__(self) -> str:
        from inspector.report.diff_text import verdict

        return f"<inspector.Diff {verdict(self.diff)}>"


class FolderDiff(_Rendered):
    """Two folders of exports compared (``onnx-inspector diff DIR_A DIR_B``); ``.diff`` is the ``DirDiff``."""

    def __init__(self, d: DirDiff) -> None:
        from inspector.report.diff_render import DIFF_SUFFIXES
        from inspector.report.dir_diff import DIR_DIFF_FORMATS

        super().__init__(DIR_DIFF_FORMATS, DIFF_SUFFIXES)
        self.diff = d

    @property
    def equal(self) -> bool:
        return self.diff.equal

    def to_dict(self) -> dict[str, Any]:
        return self.diff.to_json()

    def _render(self, fmt: str) -> str:
        from inspector.report.dir_diff import render_dir_diff

        return render_dir_diff(self.diff, fmt)

    def __repr__(self) -> str:
        from inspector.report.dir_diff import dir_diff_verdict

        return f"<inspector.FolderDiff {dir_diff_verdict(self.diff)}>"


class CheckReport(_Rendered):
    """A review check (``onnx-inspector check``): ``.passed``, ``.failing``; ``.result`` is the ``CheckResult``."""

    def __init__(self, result: CheckResult) -> None:
        from inspector.report.check_text import CHECK_FORMATS

        super().__init__(CHECK_FORMATS, {".json": "json", ".txt": "text"})
        self.result = result

    @property
    def passed(self) -> bool:
        return self.result.passed

    @property
    def failing(self) -> list[CheckItem]:
        return self.result.failing

    def to_dict(self) -> dict[str, Any]:
        return self.result.to_json()

    def _render(self, fmt: str) -> str:
        from inspector.report.check_text import render_check

        return render_check(self.result, fmt)

    def __repr__(self) -> str:
        from inspector.report.check_text import check_verdict

        return f"<inspector.CheckReport {check_verdict(self.result)}>"


# --- the calls --------------------------------------------------------------------------------------------------

def open(x: Any) -> Model:
    """Open and index ``x``: a path, an ``onnx.ModelProto``, anything with a ``.model_proto`` (a
    ``torch.onnx.ONNXProgram``), a ``Model``, or a ``ModelIndex``. A ModelProto is copied, never changed."""
    from inspector.core.model.index import ModelIndex, build_index, open_index

    if isinstance(x, Model):
        return x
    if isinstance(x, ModelIndex):
        return Model(x)
    if isinstance(x, (str, os.PathLike)):
        return Model(open_index(x))
    proto = getattr(x, "model_proto", x)  # torch.onnx.ONNXProgram, without importing torch
    import onnx

    from inspector.core.model.loader import LoadedModel

    if not isinstance(proto, onnx.ModelProto):
        raise InspectorError(f"cannot open a {type(x).__name__}: expected a path, an onnx.ModelProto or an object "
                             "with .model_proto (torch.onnx.ONNXProgram)")
    if not proto.HasField("graph") and not proto.functions:
        raise InspectorError("not an ONNX model (no graph)")
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)  # indexing may repair invalid UTF-8 in place: never in the caller's model
    return Model(build_index(LoadedModel(Path(IN_MEMORY), copy, "binary", copy.ByteSize())), in_memory=True)


def diff(a: Any, b: Any) -> Diff | FolderDiff:
    """What changed from ``a`` to ``b`` (models as for ``open``); two folders give a ``FolderDiff``."""
    if isinstance(a, (str, os.PathLike)) and isinstance(b, (str, os.PathLike)):
        from inspector.core.diff.folders import diff_dirs, is_dir_pair

        if is_dir_pair(a, b):
            return FolderDiff(diff_dirs(a, b))
        from inspector.core.diff import diff_files

        return Diff(diff_files(a, b))  # as the command does: B read into A's memory and indexed like A
    from inspector.core.diff import diff_models

    return Diff(diff_models(open(a).index, open(b).index))


def report(model: Any, format: str = "html", compare: Any = None, reviews: Any = None,
           graphs: bool = True) -> Report:
    """The annotated report of ``model`` in ``format`` (``html``, ``md`` or ``json``), with the diff against
    ``compare`` when given, and the reviews of ``reviews`` (a review file; default: the model's sidecar)."""
    from inspector.report.data import build_report
    from inspector.report.render import render_text

    if format not in ("html", "md", "json"):
        raise ValueError(f"unknown report format {format!r}; expected html, md or json (PDF: use the command)")
    m = open(model)
    d = None
    if compare is not None:
        from inspector.core.diff import diff_models

        d = diff_models(m.index, open(compare).index)
    data = build_report(m.index, _store(m, reviews, required=False), d, graphs=graphs and format == "html")
    return Report(render_text(data, format), format)


def check(model: Any, reviews: Any = None) -> CheckReport:
    """Check the reviews of ``model`` (see ``onnx-inspector check``): ``reviews`` is a review file, by default the
    model's sidecar; a model opened from memory has none, so it needs ``reviews``."""
    from inspector.core.review.check import check_model

    m = open(model)
    store = _store(m, reviews, required=True)
    assert store is not None
    return CheckReport(check_model(m.index, store))


def fold(model: Any, modules: str | Sequence[str] | None = None, hoist: bool = False,
         domain: str | None = None) -> tuple[onnx.ModelProto, FoldReport | ModuleFoldReport]:
    """The folded model and what was folded (``onnx-inspector fold``): each aten call as a function call, or with
    ``modules`` (class or module path patterns, ``"LlamaDecoderLayer,*Attention"``) each matching nn.Module
    instance; ``hoist`` makes values that differ between instances of a class call-site attributes."""
    m = open(model)
    try:
        if modules is None:
            if hoist:
                raise InspectorError("hoist needs modules")
            from inspector.core.fold.aten_fold import DEFAULT_DOMAIN, fold_model

            return fold_model(m.index, domain or DEFAULT_DOMAIN, consume=True)  # m is ours: its proto may change
        from inspector.core.fold.modules import MODULE_DOMAIN, fold_modules

        return fold_modules(m.index, modules, domain or MODULE_DOMAIN, hoist=hoist)
    except ValueError as e:
        raise InspectorError(str(e)) from None


def _store(m: Model, reviews: Any, required: bool) -> ReviewStore | None:
    """The review store for ``m``: ``reviews`` (a path or a ``ReviewStore``), else the model's sidecar."""
    from inspector.core.review.check import load_reviews
    from inspector.core.review.store import ReviewStore
    from inspector.core.util.paths import sidecar_path

    if isinstance(reviews, ReviewStore):
        return reviews
    if reviews is not None:
        return load_reviews(m.index.path, Path(reviews))
    if m.path is None:
        if required:
            raise InspectorError("a model opened from memory has no review file next to it: pass reviews=FILE")
        return None
    if not required and not os.path.lexists(sidecar_path(m.path)):
        return None
    return load_reviews(m.path, None)


def show(model: Any = None, other: Any = None) -> int:
    """Open the desktop app on ``model`` (and side by side with ``other``); blocks until it is closed.

    A model opened from memory is written to a temporary file first (removed when the app closes)."""
    try:  # imported by name: nothing else of the API (which report and render may import) depends on the GUI
        run = importlib.import_module("inspector.gui.app").run
    except ImportError as e:
        raise InspectorError(f"the desktop app needs PySide6 ({e.name or e}); install the 'gui' extra") from None
    with tempfile.TemporaryDirectory(prefix="onnx-inspector-") as tmp:
        paths = [_as_file(x, Path(tmp) / f"model{i}.onnx") for i, x in enumerate((model, other)) if x is not None]
        return run(paths)


def _as_file(x: Any, spare: Path) -> str:
    """A path to open ``x`` from: its own file, else ``spare`` with the model written to it."""
    if isinstance(x, (str, os.PathLike)):
        return os.fspath(x)
    m = open(x)
    if m.path is not None:
        return str(m.path)
    from inspector.core.util.encoding import encoded
    from inspector.core.util.fileio import write_atomic

    write_atomic(spare, encoded(m.proto))
    return str(spare)
