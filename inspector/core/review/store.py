"""Reviews of overloads and specialised values, kept in a sidecar file next to the model.

A review is a status (``unreviewed``, ``ok``, ``suspicious``, ``wrong``) and a note. It is keyed by the
fingerprints of the body it is about, not by node or value names, so it survives a re-export that renames
everything but leaves the bodies alone.

The sidecar ``<model file>.review.json`` is JSON (UTF-8, pretty-printed, sorted keys)::

    {"format": "onnx-inspector/review", "version": 1, "model": "model.onnx",
     "reviews": {"<key text>": {"status": "ok", "note": "...", "updated": "2025-01-01T12:00:00+00:00",
                                "family": "aten::transpose", "slot": "0|attribute|perm", "value": [0, 2, 1],
                                "siblings": ["<full fingerprint>", "..."]}}}

``value`` (optional, kind ``value`` only) is the specialised value as it was when reviewed, so that a later
export whose value changed can be reported with its old and new value (``onnx-inspector check``).

``siblings`` (optional) are the sorted full fingerprints of the bodies of the family with the reviewed body's
template that the model had when the entry was first written, the reviewed body among them (``template_siblings``).
``check`` reads them to tell a body that appeared after the review (a re-export with another eps for part of Swin's
layers moved their layer_norm calls to a new body, the others stayed in the reviewed one) from one that was beside
it all along (Swin's view bodies): the first is a later version of the reviewed body, the second is not. They are
sticky: setting a new status or note keeps the siblings an entry has, so the record keeps meaning "the bodies of
this template when this was first reviewed", and the items the app carries a review over to do not move while a
model is reviewed. An entry without them (older sidecars) is read as before; a ``siblings`` that is not a list of
strings is damage and is ignored.

The key text is ``ReviewKey.to_text()``: a compact JSON array ``[kind, family, template, fingerprint, slot]``.
Unknown top-level members and unknown members of an entry are kept as they are when the file is saved, and
so are entries this version cannot read. Notes are user text, stored as typed (escaping is the displayer's
job).

Safety: a sidecar that cannot be read (bad JSON, another format, a newer version, not a regular file, ``NaN``,
a huge integer, a lone surrogate, a ``version`` other than the integer 1) is never overwritten:
``load`` raises a one-line ``InspectorError`` and leaves the file byte for byte as it was, and ``set``/``save``
refuse to write while it stays unreadable. ``save`` writes a temporary file in the same folder, flushes and
fsyncs it, keeps the previous sidecar as ``<sidecar>.bak``, then ``os.replace``-s the new file into place, so
a crash leaves either the old or the new file, never a partial one. It also re-reads the sidecar first and
writes back every entry it finds there, changing only the entries set through this store, all under an
advisory lock on ``<sidecar>.lock``, so two windows or two processes on one model never drop each other's
reviews.

Matching after a re-export (``ReviewStore.get``): the exact key first; otherwise a review of the same kind and
slot on a body with the same *full* fingerprint applies even when the family label differs (a renamed
function, say). A review whose body has the same template but a different fingerprint does not apply: the
baked values changed and must be looked at again (``check`` finds such reviews: ``core.review.carried``). Across
``fold`` (a flat aten call and the aten function made of it): a review of an aten family's body records the body's *fold
key* (``fold_keys``) as ``"fold": [template, fingerprint, slot]``, and applies to any body with that fold
fingerprint and slot, flat or folded.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import stat
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inspector.core.bodies.literals import Literal
from inspector.core.review.fold_keys import fold_fingerprints, fold_slot, folds
from inspector.core.util.errors import InspectorError
from inspector.core.util.fileio import clean_stale_temps, write_atomic
from inspector.core.util.paths import lock_path, read_regular, sidecar_path

if TYPE_CHECKING:
    from inspector.core.specialise.specialiser import FamilyAnalysis

STATUSES = ("unreviewed", "ok", "suspicious", "wrong")
KINDS = ("overload", "value")
FORMAT = "onnx-inspector/review"
VERSION = 1
MAX_SIDECAR_BYTES = 64 * 1024 * 1024
MAX_INT_DIGITS = 20  # integers in a sidecar are small; a 5,000-digit one is damage, not data
LOCK_TIMEOUT = 30.0  # seconds a save waits for another writer's lock before giving up


@dataclass(frozen=True, slots=True)
class ReviewKey:
    """What a review is about: an overload (one body of a family) or one literal slot of that body."""

    kind: str  # "overload" or "value"
    family: str  # family label, e.g. "aten::transpose" or "local.tr"
    template: str  # template fingerprint of the body
    fingerprint: str  # full fingerprint of the body
    slot: str = ""  # kind "value": slot_text() of the literal
    # (template, fingerprint, slot) of the body in the form ``fold`` gives it, for the bodies of aten families
    # (``fold_keys``): the same for a flat call and its fold; not part of the key's text or identity
    fold: tuple[str, str, str] = field(default=("", "", ""), compare=False)

    def to_text(self) -> str:
        """A stable string form, used as the key of the sidecar's ``reviews`` object."""
        return json.dumps([self.kind, self.family, self.template, self.fingerprint, self.slot],
                          ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_text(cls, text: str) -> ReviewKey:
        """Inverse of ``to_text``; ``ValueError`` when ``text`` is not such a key."""
        try:
            parts = json.loads(text)
        except (json.JSONDecodeError, TypeError, RecursionError) as e:  # a key nested 100k deep is damage too
            raise ValueError(f"not a review key: {text[:80]!r}") from e
        if not (isinstance(parts, list) and len(parts) == 5 and all(isinstance(p, str) for p in parts)):
            raise ValueError(f"not a review key: {text!r}")
        return cls(*parts)

    @property
    def match_key(self) -> tuple[str, str, str]:
        """What a review must share with a key to apply to it after a re-export."""
        return (self.kind, self.fingerprint, self.slot)


@dataclass(slots=True)
class Review:
    """A reviewer's status and note on one item, with when and at what value it was reviewed."""

    status: str
    note: str = ""
    updated: str = ""  # ISO-8601 UTC timestamp of the last change; "" when never reviewed
    value: Any = None  # kind "value": the value as it was when reviewed (JSON), None when not recorded
    siblings: tuple[str, ...] = ()  # full fingerprints of its template's bodies when first reviewed; () when none


def slot_text(literal: Literal) -> str:
    """Stable text of a literal's slot in its body: ``node path|kind|attribute name``.

    Constants moved in from initializers are named by the op that reads them, since their value names change
    on a re-export.
    """
    where = "/".join(map(str, literal.path))
    what = literal.op_type if literal.kind == "initializer" else literal.name
    return f"{where}|{literal.kind}|{what}"


def _now() -> str:
    from datetime import datetime, timezone  # (here: a review written; a check only reads, start-up)

    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class ReviewStore:
    """The reviews of one model, backed by its sidecar file.

    ``load`` reads the sidecar; ``get``, ``set``, ``items`` and ``save`` load it first when nobody has.
    """

    def __init__(self, model_path: Path) -> None:
        self.model_path = Path(model_path)
        self.path = sidecar_path(self.model_path)
        self._loaded = False
        self._extra: dict[str, Any] = {}  # unknown top-level members
        self._entries: dict[str, dict[str, Any]] = {}  # key text -> entry, as read (unknown members kept)
        self._keys: dict[str, ReviewKey] = {}  # key text -> parsed key, for readable entries
        self._by_match: dict[tuple[str, str, str], list[str]] = {}
        self._by_fold: dict[tuple[str, str, str], list[str]] = {}  # (kind, fold fingerprint, fold slot) -> texts
        self._dirty: set[str] = set()  # key texts set since the last load/save

    # --- reading ------------------------------------------------------------------------------------------------

    def load(self) -> None:
        """Read the sidecar (a missing file is an empty store); ``InspectorError`` when it cannot be read."""
        extra, entries = self._read()
        self._extra, self._entries = extra, entries
        self._dirty.clear()
        self._reindex()
        self._loaded = True

    def _read(self) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """``(unknown top-level members, entries)`` from disk; never modifies the file.

        Only a regular file is read (opened non-blocking, then checked with ``fstat``, so a FIFO or device
        named like a sidecar never blocks); its JSON must be valid UTF-8 text without ``NaN``/``Infinity``,
        lone surrogates or integers of more than ``MAX_INT_DIGITS`` digits, and ``version`` the integer 1."""
        data = self._read_bytes()
        if data is None:
            return {}, {}
        try:
            doc = json.loads(data.decode("utf-8"), parse_constant=_no_constant, parse_int=_bounded_int,
                             parse_float=_finite_float)
        except UnicodeDecodeError as e:
            raise self._error("not UTF-8 text") from e
        except json.JSONDecodeError as e:
            raise self._error(f"not JSON ({e.msg} at line {e.lineno} column {e.colno})") from e
        except RecursionError as e:
            raise self._error("JSON nested too deeply") from e
        except ValueError as e:  # from the parse_* hooks
            raise self._error(str(e)) from e
        bad = _bad_string(doc)
        if bad is not None:
            raise self._error(bad)
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise self._error(f"not an {FORMAT} file")
        version = doc.get("version")
        if type(version) is not int or version != VERSION:
            raise self._error(f"unknown version {version!r} (this build reads version {VERSION})")
        reviews = doc.get("reviews", {})
        if not isinstance(reviews, dict):
            raise self._error('"reviews" is not an object')
        entries: dict[str, dict[str, Any]] = {}
        for text, entry in reviews.items():
            if not isinstance(entry, dict):
                raise self._error(f"review entry {text!r} is not an object")
            entries[text] = entry
        extra = {k: v for k, v in doc.items() if k not in ("format", "version", "model", "reviews")}
        return extra, entries

    def _read_bytes(self) -> bytes | None:
        """The sidecar's bytes, ``None`` when there is none; only a regular file is read, never through a symbolic
        link (``paths.read_regular``: notes were read from ``../outside/private.json`` through a linked sidecar)."""
        try:
            return read_regular(self.path, MAX_SIDECAR_BYTES, follow_links=False, what="a review file")
        except FileNotFoundError:
            return None
        except InspectorError as e:
            raise self._error(str(e).removeprefix(f"{self.path}: ")) from None

    def _error(self, reason: str) -> InspectorError:
        return InspectorError(f"cannot read review file {self.path}: {reason}; the file was left unchanged")

    def _reindex(self) -> None:
        self._keys.clear()
        self._by_match.clear()
        self._by_fold.clear()
        for text, entry in self._entries.items():
            self._index_entry(text, entry)

    def _index_entry(self, text: str, entry: dict[str, Any]) -> None:
        if entry.get("status") not in STATUSES:
            return  # kept on save, but not applied
        try:
            key = ReviewKey.from_text(text)
        except ValueError:
            return
        self._keys[text] = key
        same = self._by_match.setdefault(key.match_key, [])
        if text not in same:
            same.append(text)
        fold = _fold_of(entry)
        if fold is not None:
            across = self._by_fold.setdefault((key.kind, fold[1], fold[2]), [])
            if text not in across:
                across.append(text)

    def _ensure_loaded(self) -> None:
        if not self._loaded:
            self.load()

    @staticmethod
    def _review(entry: dict[str, Any]) -> Review:
        note, updated = entry.get("note", ""), entry.get("updated", "")
        return Review(str(entry["status"]), note if isinstance(note, str) else "",
                      updated if isinstance(updated, str) else "", entry.get("value"), _siblings_of(entry))

    def get(self, key: ReviewKey) -> Review:
        """The review of ``key`` (see the module doc for matching after a re-export); unreviewed when none."""
        self._ensure_loaded()
        text = key.to_text()
        if text in self._keys:
            return self._review(self._entries[text])
        candidates = self._by_match.get(key.match_key, ())
        if not candidates and key.fold[1]:  # the same body, folded or unfolded since (``fold_keys``)
            candidates = self._by_fold.get((key.kind, key.fold[1], key.fold[2]), ())
        if candidates:
            # the same body under another family label: the most recently updated review wins
            best = max(candidates, key=lambda t: (str(self._entries[t].get("updated", "")), t))
            return self._review(self._entries[best])
        return Review("unreviewed")

    def items(self) -> Iterator[tuple[ReviewKey, Review]]:
        """Every readable review, by key text."""
        self._ensure_loaded()
        for text in sorted(self._keys):
            yield self._keys[text], self._review(self._entries[text])

    def __len__(self) -> int:
        self._ensure_loaded()
        return len(self._keys)

    # --- writing ------------------------------------------------------------------------------------------------

    def set(self, key: ReviewKey, status: str, note: str = "", value: Any = None,
            siblings: Iterable[str] | None = None) -> None:
        """Record a review of ``key`` and save at once; ``ValueError`` for an unknown status or kind.

        ``value``: what a ``value`` key's literal holds now (``reviewed_value``), kept to report a later change.
        ``siblings``: the full fingerprints of the bodies of ``key``'s template in the model now
        (``template_siblings``); recorded when the entry has none yet, else the ones it has are kept (sticky)."""
        if status not in STATUSES:
            raise ValueError(f"unknown review status {status!r}; expected one of {', '.join(STATUSES)}")
        if key.kind not in KINDS:
            raise ValueError(f"unknown review kind {key.kind!r}; expected one of {', '.join(KINDS)}")
        if not isinstance(note, str) or _bad_string(note) is not None:
            raise ValueError("a review note must be valid Unicode text")
        self._ensure_loaded()
        text = key.to_text()
        entry = dict(self._entries.get(text, {}))  # keeps members this version does not know
        entry.update(status=status, note=note, updated=_now(), family=key.family, slot=key.slot)
        if key.fold[1]:
            entry["fold"] = list(key.fold)
        if value is not None:
            entry["value"] = value
        else:
            entry.pop("value", None)
        if siblings is not None and not _siblings_of(entry):  # sticky: the first ones recorded stay
            entry["siblings"] = sorted({str(s) for s in siblings} | {key.fingerprint})
        self._entries[text] = entry
        self._index_entry(text, entry)
        self._dirty.add(text)
        self.save()

    def save(self) -> None:
        """Write the sidecar atomically (see the module doc); ``InspectorError`` when it cannot be written.

        The whole read-merge-write runs under an advisory lock (``flock`` on ``<sidecar>.lock``), so two
        processes, or two windows of one process, saving at once never drop each other's reviews; temporary
        files left by a save that was killed are removed while the lock is held."""
        self._ensure_loaded()
        with self._locked():
            clean_stale_temps(self.path, older_than=0.0)  # under the lock no other save is writing one
            # Re-read what is on disk now, so reviews saved by someone else since our load are kept.
            extra, entries = self._read()
            for text in self._dirty:
                entries[text] = self._entries[text]
            doc: dict[str, Any] = dict(extra)
            doc.update(format=FORMAT, version=VERSION, model=self.model_path.name, reviews=entries)
            payload = (json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)
                       + "\n").encode("utf-8")
            write_atomic(self.path, payload, keep_backup=True, action="save review file")
        self._extra, self._entries = extra, entries
        self._dirty.clear()
        self._reindex()

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold an exclusive ``flock`` on ``<sidecar>.lock`` (a no-op where ``fcntl`` does not exist)."""
        try:
            import fcntl
        except ImportError:  # Windows: no advisory locks; saves still merge, without the guarantee
            yield
            return
        lock = lock_path(self.path)
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK, 0o666)
        except OSError as e:
            raise InspectorError(f"cannot save review file {self.path}: cannot open lock file "
                                 f"{lock.name}: {e.strerror or e}") from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise InspectorError(f"cannot save review file {self.path}: {lock.name} is not a regular file")
            deadline = time.monotonic() + LOCK_TIMEOUT
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise InspectorError(f"cannot save review file {self.path}: another program has held "
                                             f"{lock.name} for {LOCK_TIMEOUT:.0f} s") from None
                    time.sleep(0.005)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a review file may hold")


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(text.lstrip('-'))} digits")
    return int(text)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:20]} is out of range")
    return value


def _bad_string(doc: object) -> str | None:
    """Why ``doc`` holds a string that is not valid Unicode (a lone surrogate), or ``None``."""
    stack = [doc]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            texts: Iterable[object] = (item,)
        elif isinstance(item, dict):
            texts = item.keys()
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
            continue
        else:
            continue
        for t in texts:
            try:
                str(t).encode("utf-8")
            except UnicodeEncodeError:
                return "a string holds a lone surrogate (not valid Unicode)"
    return None


# --- what there is to review -----------------------------------------------------------------------------------

def review_keys(analysis: FamilyAnalysis) -> list[tuple[ReviewKey, object]]:
    """Every reviewable thing of a family: per body, its ``overload`` key (with the ``BodyAnalysis``), then a
    ``value`` key per specialised value that is not parametric (with the ``SpecialisedValue``).

    When two literals of one body have the same slot text (two initializers read by the same kind of op), the
    second and later get ``#2``, ``#3``… appended, counted over all the body's literals so that the suffix does
    not depend on which of them happen to be specialised.
    """
    family = analysis.family.label
    across = folds(analysis)
    out: list[tuple[ReviewKey, object]] = []
    for body in analysis.bodies:
        fp = body.fingerprints
        ffp = fold_fingerprints(body) if across else None
        fold = (ffp.template, ffp.full, "") if ffp is not None else ("", "", "")
        out.append((ReviewKey("overload", family, fp.template, fp.full, fold=fold), body))
        texts = _slot_texts(body.literals)
        for spec in body.specialised:
            lit = spec.literal
            if lit.kind == "parametric":
                continue
            slot = texts.get(id(lit)) or _slot_by_value(body.literals, texts, lit)
            if ffp is not None:
                fold = (ffp.template, ffp.full, fold_slot(body, lit, texts))
            out.append((ReviewKey("value", family, fp.template, fp.full, slot, fold), spec))
    return out


def _fold_of(entry: dict[str, Any]) -> tuple[str, str, str] | None:
    """An entry's fold key (``fold_keys``), None when it has none or it is not three strings."""
    fold = entry.get("fold")
    if isinstance(fold, list) and len(fold) == 3 and all(isinstance(x, str) for x in fold):
        return (fold[0], fold[1], fold[2])
    return None


def _siblings_of(entry: dict[str, Any]) -> tuple[str, ...]:
    """An entry's ``siblings``, () when it has none or they are not a list of strings (damage is ignored)."""
    siblings = entry.get("siblings")
    if isinstance(siblings, list) and all(isinstance(s, str) for s in siblings):
        return tuple(siblings)
    return ()


def template_siblings(analysis: FamilyAnalysis, key: ReviewKey) -> list[str]:
    """What a review of ``key`` records as its ``siblings``: the sorted full fingerprints of ``analysis``'s bodies
    with ``key``'s template (``key``'s own body among them)."""
    return sorted({b.fingerprints.full for b in analysis.bodies if b.fingerprints.template == key.template}
                  | {key.fingerprint})


def fold_key_of(store: ReviewStore, key: ReviewKey) -> tuple[str, str, str] | None:
    """The fold key recorded with the review of ``key`` in ``store`` (``check`` pairs earlier bodies by it)."""
    entry = store._entries.get(key.to_text())
    return _fold_of(entry) if entry is not None else None


def reviewed_value(obj: object) -> Any:
    """What a review of ``obj`` (an item of ``review_keys``) records as its value: a specialised value's literal
    value (JSON), ``None`` for an overload."""
    literal = getattr(obj, "literal", None)
    return literal.value if isinstance(literal, Literal) else None


def _slot_texts(literals: list[Literal]) -> dict[int, str]:
    seen: dict[str, int] = {}
    out: dict[int, str] = {}
    for lit in literals:
        text = slot_text(lit)
        n = seen.get(text, 0) + 1
        seen[text] = n
        out[id(lit)] = text if n == 1 else f"{text}#{n}"
    return out


def _slot_by_value(literals: list[Literal], texts: dict[int, str], lit: Literal) -> str:
    for other in literals:
        if other == lit:
            return texts[id(other)]
    return slot_text(lit)


def unreviewed(store: ReviewStore, analyses: Iterable[FamilyAnalysis]) -> list[tuple[ReviewKey, object]]:
    """The reviewable things of ``analyses`` that have no review yet (or whose review was reset)."""
    return [(key, obj) for analysis in analyses for key, obj in review_keys(analysis)
            if store.get(key).status == "unreviewed"]
