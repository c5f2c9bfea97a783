"""The Python API for torch users and notebooks, and the one front door of the command line: ``inspector.open``,
``diff``, ``report``, ``check``, ``fold``, ``show``. ``inspector.commands`` are argument parsing over these calls;
they wire core and report together here only, so the command and the API give the same result by construction.

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

A command run by the console script ends its process as soon as its output is written (``inspector.cli.entry``)
and leaves what it built to the operating system, which takes the memory back at once: freed object by object, a
100k-node model and its index (about a million Python objects) cost 0.1 s at the end of a summary, and a diff's two
models and their units 0.3 s. ``keep`` is how the calls here hand those objects over; run in-process (tests,
notebooks) nothing is kept, so nothing outlives the call. Such a process also runs without the cyclic garbage
collector: the first collection after indexing walked everything indexed, 0.13-0.2 s of a 100k-node summary, report
or diff, to find no garbage.
"""

from __future__ import annotations

import gc
import importlib
import os
from collections.abc import Callable, Iterator, Sequence
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
REPORT_FORMATS = ("html", "md", "json", "pdf")

_kept: list[object] | None = None  # a list once the process is to end after this call


def leave_to_exit() -> None:
    """This process ends after the call (``os._exit``): what the calls keep is never freed one by one, and the
    cyclic collector is off."""
    global _kept
    if _kept is None:
        _kept = []
    gc.disable()


def kept() -> list[object] | None:
    """Where a call puts what it built when the process ends after it; None when it runs in-process."""
    return _kept


def keep(*objects: object) -> None:
    """Hold ``objects`` until the process ends, when it ends after this call; otherwise do nothing."""
    if _kept is not None:
        _kept.extend(objects)


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

    def summary_text(self) -> str:
        """The ``onnx-inspector summary`` text."""
        from inspector.core.summary import summary_text

        data = self.summary()
        keep(data)
        return summary_text(data)

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

    def protected(self) -> list[Path]:
        """The files no ``save`` of this result may replace: its input models' (``paths.model_files``)."""
        return []

    def _guard(self, target: Path) -> None:
        from inspector.core.util.paths import check_output

        check_output(target, self.protected(), f"the {type(self).__name__.lower()}")

    def save(self, path: str | os.PathLike[str], format: str | None = None) -> Path:
        """Write the result to ``path`` atomically, in ``format`` (default: from the suffix, else ``.text``'s);
        never over one of its inputs' files (``protected``)."""
        from inspector.core.util.fileio import write_atomic

        target = Path(path)
        self._guard(target)
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
    """An annotated report (``onnx-inspector report``) in one format: ``.data`` is the file's bytes, and a text
    format (not ``pdf``) is also ``.text``."""

    def __init__(self, text: str, format: str, data: bytes | None = None, inputs: Sequence[Path] = ()) -> None:
        super().__init__((format,), {f".{format}": format}, format)
        self._text, self.format, self._data = text, format, data
        self._inputs = list(inputs)

    def protected(self) -> list[Path]:
        return self._inputs

    @property
    def data(self) -> bytes:
        """What ``save`` writes: the text as UTF-8, or the PDF."""
        return self._data if self._data is not None else self._text.encode("utf-8")

    def _render(self, fmt: str) -> str:
        if self._data is not None:
            raise ValueError(f"a {self.format} report is not text: use .data or .save(path)")
        return self._text

    def save(self, path: str | os.PathLike[str], format: str | None = None, make_parents: bool = True) -> Path:
        """Write the report to ``path`` atomically (``format``, if given, must be the report's), making its folder
        when ``make_parents`` (the command does not: a mistyped folder is an error there)."""
        from inspector.core.util.fileio import write_atomic

        if format not in (None, self.format):
            raise ValueError(f"this report is {self.format}, not {format}")
        target = Path(path)
        self._guard(target)
        write_atomic(target, self.data, make_parents=make_parents)
        return target

    def _repr_html_(self) -> str:
        if self.format == "html":
            return framed(self._text)
        from inspector.core.util.textsafe import html_text

        if self._data is not None:
            return f"<p>A {html_text(self.format)} report of {len(self._data):,} bytes: use .save(path).</p>"
        return f"<pre>{html_text(self._text, keep_newlines=True)}</pre>"

    def __repr__(self) -> str:
        if self._data is not None:
            return f"<inspector.Report {self.format}, {len(self._data):,} bytes>"
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
        return "".join(self.chunks(fmt))

    def chunks(self, format: str | None = None) -> Iterator[str]:
        """The diff in ``format``, in pieces (JSON is encoded as it is written: never one string at 200k nodes)."""
        from inspector.report.diff_render import diff_chunks

        return diff_chunks(self.diff, format or self.default_format)

    def save(self, path: str | os.PathLike[str], format: str | None = None) -> Path:
        """Write the diff to ``path`` atomically, in pieces, in ``format`` (default: from the suffix, else text)."""
        from inspector.core.util.fileio import write_atomic

        target = Path(path)
        self._guard(target)
        fmt = format or self.suffixes.get(target.suffix.lower(), self.default_format)
        write_atomic(target, (c.encode("utf-8") for c in self.chunks(fmt)), make_parents=True)
        return target

    def protected(self) -> list[Path]:
        return self.diff.protected  # both models, with their external data

    @property
    def verdict(self) -> str:
        """One line: equal, equivalent or what differs."""
        from inspector.report.diff_text import verdict

        return verdict(self.diff)

    def __repr__(self) -> str:
        return f"<inspector.Diff {self.verdict}>"


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

    def protected(self) -> list[Path]:
        """Every model file the folder diff paired, with its review files."""
        from inspector.core.diff.folders import protected_files

        return protected_files(self.diff.a, self.diff.b)

    def _render(self, fmt: str) -> str:
        from inspector.report.dir_diff import render_dir_diff

        return render_dir_diff(self.diff, fmt)

    @property
    def verdict(self) -> str:
        """One line: how many pairs are equal, equivalent, different, or only in one folder."""
        from inspector.report.dir_diff import dir_diff_verdict

        return dir_diff_verdict(self.diff)

    def __repr__(self) -> str:
        return f"<inspector.FolderDiff {self.verdict}>"


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

def open(x: Any, modules: bool = True, maps: bool = False) -> Model:
    """Open and index ``x``: a path, an ``onnx.ModelProto``, anything with a ``.model_proto`` (a
    ``torch.onnx.ONNXProgram``), a ``Model``, or a ``ModelIndex``. A ModelProto is copied, never changed.
    ``modules=False`` leaves out the module tree (a summary does not show it); ``maps=True`` for a caller that
    specialises or folds at once (``core.model.index.open_index``)."""
    from inspector.core.model.index import ModelIndex, build_index, open_index

    if isinstance(x, Model):
        return x
    if isinstance(x, ModelIndex):
        return Model(x)
    if isinstance(x, (str, os.PathLike)):
        index = open_index(x, modules=modules, maps=maps)
        keep(index)
        return Model(index)
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
    return Model(build_index(LoadedModel(Path(IN_MEMORY), copy, "binary", copy.ByteSize()), modules, maps=maps),
                 in_memory=True)


def diff(a: Any, b: Any, jobs: int | None = None) -> Diff | FolderDiff:
    """What changed from ``a`` to ``b`` (models as for ``open``); two folders give a ``FolderDiff`` (their pairs
    diffed in ``jobs`` processes at once; default: at most ``MAX_JOBS``, never more than the CPUs)."""
    if isinstance(a, (str, os.PathLike)) and isinstance(b, (str, os.PathLike)):
        if Path(a).is_dir() or Path(b).is_dir():  # (the folder diff's module only for folders: start-up)
            from inspector.core.diff.folders import diff_dirs, is_dir_pair

            if is_dir_pair(a, b):
                return FolderDiff(diff_dirs(a, b, jobs=jobs))
        from inspector.core.diff import diff_files

        return Diff(diff_files(a, b, keep=kept()))  # B read into A's memory and indexed like A
    from inspector.core.diff import diff_models

    return Diff(diff_models(open(a).index, open(b).index, keep=kept()))


def report(model: Any, format: str = "html", compare: Any = None, reviews: Any = None, graphs: bool = True,
           on_warning: Callable[[str], None] | None = None) -> Report:
    """The annotated report of ``model`` in ``format`` (``html``, ``md``, ``json`` or ``pdf``), with the diff
    against ``compare`` when given, and the reviews of ``reviews`` (a review file; default: the model's sidecar).

    A sidecar that cannot be read raises, unless ``on_warning`` is given: it is then told, and the report has no
    reviews (the sidecar is never written). PDF needs PySide6 (``inspector.pdf``), checked before any work."""
    if format not in REPORT_FORMATS:
        raise ValueError(f"unknown report format {format!r}; expected one of {', '.join(REPORT_FORMATS)}")
    to_pdf = _pdf_writer() if format == "pdf" else None
    m = open(model, modules=False, maps=True)  # (a report shows no module tree: the scan need not read name scopes)
    d = None
    inputs = m.index.protected_files() if not m.in_memory else []
    if compare is not None:
        from inspector.core.diff import diff_models

        other = open(compare, modules=False)
        inputs += other.index.protected_files() if not other.in_memory else []
        d = diff_models(m.index, other.index, keep=kept())
    store = _store(m, reviews, required=False, on_warning=on_warning)
    from inspector.report.build import build_report
    from inspector.report.render import render_text

    data = build_report(m.index, store, d, graphs=graphs and format in ("html", "pdf"))
    text = render_text(data, format)
    keep(data, d)
    return Report("", format, to_pdf(text), inputs) if to_pdf is not None else Report(text, format, None, inputs)


def _pdf_writer() -> Callable[[str], bytes]:
    """Qt's printer (``inspector.pdf``), or a one-line error without PySide6. Imported by name, as the app is in
    ``show``: report and render import the ``inspector`` package (its version), which reaches this module."""
    pdf = importlib.import_module("inspector.pdf")
    pdf.require_qt()
    writer: Callable[[str], bytes] = pdf.html_to_pdf_bytes
    return writer


def check(model: Any, reviews: Any = None) -> CheckReport:
    """Check the reviews of ``model`` (see ``onnx-inspector check``): ``reviews`` is a review file, by default the
    model's sidecar; a model opened from memory has none, so it needs ``reviews``. A model given by path has its
    reviews read first, so that a missing review file is said before the model is read."""
    from inspector.core.review.check import check_model, load_reviews
    from inspector.core.review.store import ReviewStore

    store = None
    if isinstance(model, (str, os.PathLike)) and not isinstance(reviews, ReviewStore):
        store = load_reviews(Path(model), Path(reviews) if reviews is not None else None)
    m = open(model, maps=True)
    if store is None:
        store = _store(m, reviews, required=True)
    assert store is not None
    return CheckReport(check_model(m.index, store))


def fold(model: Any, output: str | os.PathLike[str], domain: str | None = None, check: bool = False,
         modules: str | Sequence[str] | None = None, hoist: bool = False) -> FoldReport | ModuleFoldReport:
    """Fold a flat dynamo export (``model`` as for ``open``) and write it to ``output`` (atomically, in pieces,
    never over the model's own files): each aten call becomes a call of a local function in ``domain``, or, with
    ``modules`` (class or module-path patterns, ``"LlamaDecoderLayer,*Attention"``), each matching nn.Module
    instance does; ``hoist`` makes values that differ between instances of a class call-site attributes. ``check``
    runs ``onnx.checker.check_model(full_check=True)`` first. What was folded, and what was left flat, is returned."""
    from inspector.core.util.encoding import encoded
    from inspector.core.util.fileio import write_atomic
    from inspector.core.util.paths import check_output

    if hoist and modules is None:
        raise InspectorError("--hoist needs --modules")
    own = isinstance(model, (str, os.PathLike))  # opened here: the fold may consume the index
    index = open(model, modules=modules is not None, maps=True).index
    check_output(output, index.protected_files(), "the folded model")
    if index.parameters().external_bytes and Path(output).resolve().parent != index.path.parent:
        raise InspectorError("the model keeps weights as external data; write the folded model into the same "
                             "folder so that their locations stay valid")
    if not index.provenance.calls:
        have = len(index.functions.functions)
        already = f"; it has {have} local functions already (a TorchScript export?)" if have else ""
        raise InspectorError(f"{model}: no aten calls to fold (no pkg.torch.onnx.fx_node metadata){already}")
    result: FoldReport | ModuleFoldReport
    try:
        if modules is None:
            from inspector.core.fold.aten_fold import DEFAULT_DOMAIN, fold_model

            folded, result = fold_model(index, domain or DEFAULT_DOMAIN, consume=own)
        else:
            from inspector.core.fold.modules import MODULE_DOMAIN, fold_modules

            folded, result = fold_modules(index, modules, domain or MODULE_DOMAIN, hoist=hoist)
        keep(folded)
    except ValueError as e:
        raise InspectorError(str(e)) from None
    if check and index.parameters().external_bytes:
        # the checker finds external weights beside the model's file, so the written file is checked, under a
        # name of its own beside the output, and takes the output's name only once it passed
        staged = Path(output).with_name(f".{Path(output).name}.{os.getpid()}.unchecked")
        write_atomic(staged, encoded(folded), make_parents=True)
        try:
            _check_folded(str(staged))
        except InspectorError:
            staged.unlink(missing_ok=True)
            raise
        os.replace(staged, output)
        return result
    if check:
        _check_folded(folded)
    write_atomic(Path(output), encoded(folded), make_parents=True)  # in pieces: no 130 MB buffer at 100k nodes
    return result


def _check_folded(model: onnx.ModelProto | str) -> None:
    import onnx

    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception as e:
        reason = " ".join(str(e).split())[:300]
        raise InspectorError(f"the folded model does not pass the checker: {reason}") from None


def _store(m: Model, reviews: Any, required: bool,
           on_warning: Callable[[str], None] | None = None) -> ReviewStore | None:
    """The review store for ``m``: ``reviews`` (a path or a ``ReviewStore``), else the model's sidecar; a sidecar
    that cannot be read goes to ``on_warning`` when one is given and reviews are not required."""
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
        return None  # no reviews yet; anything else by that name (a FIFO, a folder) is not readable, below
    try:
        return load_reviews(m.path, None)  # reads only; nothing here writes the sidecar
    except InspectorError as e:
        if required or on_warning is None:
            raise
        on_warning(f"{e}; the report has no reviews")
        return None


def show(model: Any = None, other: Any = None) -> int:
    """Open the desktop app on ``model`` (and side by side with ``other``); blocks until it is closed.

    A model opened from memory is written to a temporary file first (removed when the app closes)."""
    try:  # imported by name: nothing else of the API (which report and render may import) depends on the GUI
        run = importlib.import_module("inspector.gui.app").run
    except ImportError as e:
        raise InspectorError(f"the desktop app needs PySide6 ({e.name or e}); install the 'gui' extra") from None
    import tempfile  # (here only: with shutil and random it was 3 ms of every command's start-up)

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
