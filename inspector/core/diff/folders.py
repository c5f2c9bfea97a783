"""Two folders of exports compared: the models are paired by relative path and each pair is diffed.

``diff_dirs(a, b)`` lists the model files (``.onnx``, ``.onnxtxt``) under each folder without following
symbolic links out of it: a linked folder is never entered, and a linked file is used only when it resolves to a
regular file inside the same folder (otherwise its row is an ``error`` saying so). Each pair is diffed with
``diff_files``, in a pool of worker processes when there are several (at most ``MAX_JOBS``, never more than the
CPUs), so a slow pair does not hold up the others. A pair that fails to load, and a worker that dies, become a
row with a one-line error, never a crash. Rows are in path order.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from inspector.core.util.errors import InspectorError
from inspector.core.util.paths import model_files

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

DirStatus = Literal["equal", "equivalent", "different", "only_a", "only_b", "error"]
DIR_STATUSES: tuple[DirStatus, ...] = get_args(DirStatus)
DIR_DIFF_FORMAT = "onnx-inspector/dir-diff"
DIR_DIFF_VERSION = 1
MODEL_SUFFIXES = (".onnx", ".onnxtxt")
MAX_JOBS = 2  # each worker holds two indexed models; more rarely pays on a laptop
MAX_FILES = 100_000  # model files under one folder
MAX_FAMILIES_LISTED = 8


@dataclass(frozen=True, slots=True)
class DirRow:
    """One relative path: its status, and for a pair that differs what kinds of change and which families."""

    path: str  # relative, with "/" separators
    status: DirStatus
    changes: int = 0
    kinds: dict[str, int] = field(default_factory=dict)  # change kind -> count
    families: tuple[str, ...] = ()  # families (or op labels) with changes, at most MAX_FAMILIES_LISTED
    error: str = ""  # one line, for status "error"

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "status": self.status, "changes": self.changes, "kinds": dict(self.kinds),
                "families": list(self.families), "error": self.error or None}


@dataclass(slots=True)
class DirDiff:
    """Two folders compared: a row per relative path, in path order."""

    a: str
    b: str
    rows: list[DirRow]

    @property
    def equal(self) -> bool:
        """Every path is on both sides and every pair is equal."""
        return all(r.status == "equal" for r in self.rows)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = dict.fromkeys(DIR_STATUSES, 0)
        for r in self.rows:
            out[r.status] += 1
        return out

    def to_json(self) -> dict[str, Any]:
        return {"format": DIR_DIFF_FORMAT, "version": DIR_DIFF_VERSION, "a": self.a, "b": self.b,
                "equal": self.equal, "counts": self.counts(), "rows": [r.to_json() for r in self.rows]}


def is_dir_pair(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Both are folders (``diff`` then compares folders); ``InspectorError`` when only one is."""
    da, db = Path(a).is_dir(), Path(b).is_dir()
    if da != db:
        folder, other = (a, b) if da else (b, a)
        raise InspectorError(f"{folder} is a folder but {other} is not: give two model files or two folders")
    return da


def diff_dirs(a: str | os.PathLike[str], b: str | os.PathLike[str], jobs: int | None = None,
              progress: Callable[[int, int], None] | None = None) -> DirDiff:
    """Pair the models under folders ``a`` and ``b`` by relative path and diff each pair (see the module doc).

    ``jobs``: worker processes (default: ``MAX_JOBS`` or the CPU count, whichever is smaller; 1 runs in this
    process). ``progress(done, total)`` is called as pairs finish."""
    models_a, problems_a = list_models(Path(a))
    models_b, problems_b = list_models(Path(b))
    rows: dict[str, DirRow] = {}
    pairs: list[tuple[str, str, str]] = []
    for rel in sorted(set(models_a) | set(models_b) | set(problems_a) | set(problems_b)):
        problem = problems_a.get(rel) or problems_b.get(rel)
        if problem:
            side = "A" if rel in problems_a else "B"
            rows[rel] = DirRow(rel, "error", error=f"{side}: {problem}")
        elif rel not in models_b:
            rows[rel] = DirRow(rel, "only_a")
        elif rel not in models_a:
            rows[rel] = DirRow(rel, "only_b")
        else:
            pairs.append((rel, str(models_a[rel]), str(models_b[rel])))
    for row in _run_pairs(pairs, jobs, progress):
        rows[row.path] = row
    return DirDiff(str(a), str(b), [rows[k] for k in sorted(rows)])


def __getattr__(name: str) -> Any:
    """``ProcessPoolExecutor`` and ``BrokenProcessPool``, imported on first use: concurrent.futures' process pool
    (multiprocessing, sockets, logging) is 20-25 ms of CPU that a diff of two files, which imports this module,
    never uses. The pool code reads them as this module's attributes (``_pool_types``)."""
    if name in ("ProcessPoolExecutor", "BrokenProcessPool"):
        from concurrent.futures import ProcessPoolExecutor
        from concurrent.futures.process import BrokenProcessPool

        globals().update(ProcessPoolExecutor=ProcessPoolExecutor, BrokenProcessPool=BrokenProcessPool)
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _pool_types() -> tuple[type[ProcessPoolExecutor], type[BrokenProcessPool]]:
    module = sys.modules[__name__]
    return module.ProcessPoolExecutor, module.BrokenProcessPool


def _run_pairs(pairs: list[tuple[str, str, str]], jobs: int | None,
               progress: Callable[[int, int], None] | None) -> list[DirRow]:
    """Each pair diffed in a worker process, ``jobs`` at a time, so that a pair that crashes the process (native
    code on untrusted input) is that pair's error row and every other pair still gets its row."""
    pool_type, broken_pool = _pool_types()
    workers = max(1, min(len(pairs), jobs if jobs is not None else min(MAX_JOBS, os.cpu_count() or 1)))
    out: list[DirRow] = []
    broken: list[tuple[str, str, str]] = []

    def done(row: DirRow) -> None:
        out.append(row)
        if progress:
            progress(len(out), len(pairs))

    # the platform's default start method: fork on Linux (no re-import of onnx per worker, and no need for the
    # caller's script to guard its main code as spawn needs)
    if pairs:
        with pool_type(max_workers=workers) as pool:
            futures = [(pair, pool.submit(diff_pair, *pair)) for pair in pairs]
            for pair, future in futures:
                try:
                    done(future.result())
                except broken_pool:  # one worker died: every pair not finished yet fails with it
                    broken.append(pair)
                except Exception as e:
                    done(DirRow(pair[0], "error", error=_failed(e)))
    for pair in broken:  # again, each alone: only the pair that kills its process is an error
        done(_isolated(pair))
    return out


def _isolated(pair: tuple[str, str, str]) -> DirRow:
    pool_type, broken_pool = _pool_types()
    with pool_type(max_workers=1) as pool:
        try:
            return pool.submit(diff_pair, *pair).result()
        except broken_pool:
            return DirRow(pair[0], "error", error="the diff process crashed on this pair (killed by a signal or "
                                                  "out of memory)")
        except Exception as e:
            return DirRow(pair[0], "error", error=_failed(e))


def _failed(e: BaseException) -> str:
    return f"the diff process failed: {type(e).__name__}: {' '.join(str(e).split())[:200]}"


def diff_pair(rel: str, path_a: str, path_b: str) -> DirRow:
    """Diff one pair (run in a worker process); any failure is the row's one-line error."""
    from inspector.core.diff import diff_files

    try:
        d = diff_files(path_a, path_b)
    except InspectorError as e:
        return DirRow(rel, "error", error=str(e))
    except Exception as e:  # untrusted input: whatever goes wrong is this row's problem, not the run's
        return DirRow(rel, "error", error=f"internal error: {type(e).__name__}: {' '.join(str(e).split())[:200]}")
    status: DirStatus = "equal" if d.equal else "equivalent" if d.equivalent else "different"
    families: list[str] = []
    for c in d.changes:
        if c.family and c.family not in families:
            families.append(c.family)
    return DirRow(rel, status, len(d.changes), d.counts(), tuple(families[:MAX_FAMILIES_LISTED]))


def list_models(root: Path) -> tuple[dict[str, Path], dict[str, str]]:
    """``(models, problems)`` under ``root`` by relative path: the model files to use (a link resolved to its
    target inside ``root``), and paths that cannot be used with why (a link out of the folder, an unreadable
    folder). ``InspectorError`` when ``root`` is not a readable folder."""
    try:
        top = root.resolve(strict=True)
    except OSError as e:
        raise InspectorError(f"cannot read folder {root}: {e.strerror or e}") from None
    if not top.is_dir():
        raise InspectorError(f"{root} is not a folder")
    models: dict[str, Path] = {}
    problems: dict[str, str] = {}
    stack: list[tuple[Path, str]] = [(top, "")]
    while stack:
        folder, prefix = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError as e:
            if not prefix:
                raise InspectorError(f"cannot read folder {root}: {e.strerror or e}") from None
            problems[prefix.rstrip("/")] = f"cannot read the folder: {e.strerror or e}"
            continue
        for entry in entries:
            rel = prefix + entry.name
            if entry.is_symlink():
                if entry.name.endswith(MODEL_SUFFIXES):
                    target, why = _inside(Path(entry.path), top)
                    if target is None:
                        problems[rel] = why
                    else:
                        models[rel] = target
                continue  # a linked folder is never entered
            if entry.is_dir(follow_symlinks=False):
                stack.append((Path(entry.path), rel + "/"))
            elif entry.name.endswith(MODEL_SUFFIXES):
                if entry.is_file(follow_symlinks=False):
                    models[rel] = Path(entry.path)
                else:  # a FIFO or a device named like a model is never opened (it could block)
                    problems[rel] = "not a regular file"
            if len(models) + len(problems) > MAX_FILES:
                raise InspectorError(f"more than {MAX_FILES:,} model files under {root}")
    return models, problems


def _inside(link: Path, top: Path) -> tuple[Path | None, str]:
    """Where ``link`` leads when that is a regular file inside ``top``; else ``None`` and why it is not used."""
    try:
        target = link.resolve(strict=True)
        if not stat.S_ISREG(target.stat().st_mode):
            return None, "a link to something that is not a regular file (not followed)"
    except RuntimeError:  # Python < 3.13 reports a loop so
        return None, "a symbolic link loop"
    except OSError as e:
        if e.errno == errno.ELOOP:
            return None, "a symbolic link loop"
        return None, "a link to nothing (dangling)"
    if not target.is_relative_to(top):
        return None, "a link to a file outside the folder (not followed)"
    return target, ""


def protected_files(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> list[Path]:
    """What an output of a folder diff of ``a`` and ``b`` may not replace: every model file it pairs (as found
    and as linked to) and each one's review sidecar, lock and backup (``paths.model_files``)."""
    out: list[Path] = []
    for root in (a, b):
        models, _problems = list_models(Path(root))
        for rel, target in models.items():
            out += model_files(Path(root) / rel)
            if target != Path(root) / rel:
                out += model_files(target)
    return out
