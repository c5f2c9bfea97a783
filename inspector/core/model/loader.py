"""Open ONNX files (binary protobuf or ONNX text syntax) as untrusted input.

External data is never read here: weights of many GB must not slow opening. Every failure becomes a
``ModelLoadError`` with a one-line reason, its quoted bytes made printable (a parse error quotes the file: ESC and
BEL from it would reach the terminal). ONNX's text parser is native code that recurses once per bracket: a 100 KB
file with ``seq(`` nested 20,000 deep killed the process (SIGSEGV), so nesting is bounded before it sees the text.
"""

from __future__ import annotations

import _thread
import contextlib
import io
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import onnx
from google.protobuf.message import DecodeError

from inspector.core.util.errors import InspectorError, ModelLoadError
from inspector.core.util.mapped import mapped
from inspector.core.util.paths import named, open_regular
from inspector.core.util.progress import Progress
from inspector.core.util.textsafe import one_line

TEXT_SUFFIXES = (".onnxtxt", ".onnxtext", ".txt")
# Brackets nested deeper than this are refused before onnx.parser runs: it crashed at 20,000 and parsed 3,000 (whose
# model upb then refuses: past ~100 levels of messages, i.e. ~33 nested graphs, no text model loads anyway)
MAX_TEXT_NESTING = 1_000
# upb refuses messages nested deeper than 100 levels; a model with ~33 nested If/Loop bodies already hits that.
# With oversize protos allowed it reads up to 65,535 levels: each nested subgraph costs three (graph, node,
# attribute), so about 21,800 nested If/Loop bodies.
_DEEP_STACK_BYTES = 512 * 1024 * 1024
MAX_MESSAGE_DEPTH = 65_535
_deep_lock = _thread.allocate_lock()  # (_thread, not threading: 2.4 million instructions of start-up)
# One protobuf parse of a 167 MB export takes 0.7-2.6 s with no way to report progress or stop it. A caller that
# asks for progress gets files above PIECEWISE_BYTES parsed _PIECE_BYTES at a time (_parse_in_pieces), with a
# checkpoint after each piece: 1 MB pieces took up to 12 ms each, 256 KB pieces at most 4 ms, for 0.03 s more in all
PIECEWISE_BYTES = 32 << 20
# protobuf encodes a message's length in 31 bits: no model file above 2 GiB is a valid ONNX protobuf (larger models
# keep their weights as external data). Refused by size, before memory for it is asked for (a 50 GB sparse file was
# an internal MemoryError)
MAX_MODEL_BYTES = (1 << 31) - 1
_PIECE_BYTES = 256 << 10


@dataclass(slots=True)
class LoadedModel:
    """A parsed model and where it came from (the folder bounds what external data may be read)."""

    path: Path
    proto: onnx.ModelProto
    format: str  # "binary" or "text"
    file_size: int

    @property
    def folder(self) -> Path:
        return self.path.parent

    @property
    def name(self) -> str:
        return self.path.name


def load_model(path: str | os.PathLike[str], buffer: ReadBuffer | None = None,
               progress: Progress | None = None) -> LoadedModel:
    """Read and parse ``path``; raise ``ModelLoadError`` with a one-line reason on any bad input. The file is parsed
    where it lies, mapped, where a read lease keeps it from changing meanwhile (``util.mapped``), else read; ``buffer``:
    read it into that memory (``ReadBuffer``: the files of a diff, one after the other).

    ``progress``: a checkpoint (``core.util.progress``), in bytes. A binary file above ``PIECEWISE_BYTES`` is then
    parsed ``_PIECE_BYTES`` at a time and ``progress(done, total)`` is called after each piece, so the caller can
    show how far the load got, do its own work in between, or stop the load by raising.
    Parsing in pieces costs a little: 0.26 s for 167 MB in 639 pieces, against 0.17 s whole; without ``progress``
    the file is parsed whole. The model is the same either way."""
    p = Path(path)
    with _file_bytes(p, buffer) as data:
        if _looks_like_text_syntax(p, data):
            proto = parse_text_model(bytes(data), str(p))
            fmt = "text"
        else:
            proto = parse_binary_model(data, str(p), progress)
            fmt = "binary"
        size = len(data)
    return LoadedModel(path=named(p), proto=proto, format=fmt, file_size=size)


class ReadBuffer:
    """Memory that model files are read into one after the other, for the two files of a diff. Protobuf copies
    what it parses (nothing of a parsed model points into the file's bytes), so the second file may be read into
    the pages the first one was read into. Fresh memory for it costs this VM 0.23-0.45 s at 168 MB (a fresh 168 MB
    is a 41k page faults while the first model's 300 MB are held); the reused pages take 0.18 s, every time. Only a
    file that is read takes it (one that is mapped, ``util.mapped``, is parsed where it lies): the memory is asked for
    at the first read."""

    def __init__(self, paths: Sequence[str | os.PathLike[str]] = ()) -> None:
        """``paths``: the files it will read, to be sized for the largest at once (a larger file later is read into
        memory of its own)."""
        size = 0
        for path in paths:
            with contextlib.suppress(OSError):
                st_size = os.stat(path).st_size
                if st_size <= MAX_MODEL_BYTES:  # (a larger file is refused unread)
                    size = max(size, st_size)
        self._size = size
        self._memory: bytearray | None = None

    def read(self, fh: io.FileIO) -> memoryview:
        """The rest of ``fh`` (an unbuffered file), in this buffer's memory while it fits."""
        if self._memory is None:
            self._memory = bytearray(self._size)
        view = memoryview(self._memory)
        n = 0
        while n < len(view):
            got = fh.readinto(view[n:])
            if not got:
                return view[:n]
            n += got
        more = fh.read()  # longer than the memory: the whole file in memory of its own
        return memoryview(bytes(view) + more) if more else view


@contextlib.contextmanager
def _file_bytes(p: Path, buffer: ReadBuffer | None = None) -> Iterator[bytes | memoryview]:
    """The file's bytes for the ``with`` block: opened once, without blocking, and checked on the open descriptor
    (``paths.open_regular``: a FIFO swapped in after a check by name blocked forever); refused by its size, and a
    binary file by its first byte, before memory is asked for. Mapped where the kernel keeps them from changing
    (``util.mapped``: no copy of the file), else read (into ``buffer`` where given)."""
    try:
        fd = open_regular(p, what="an ONNX file")
    except FileNotFoundError:
        raise ModelLoadError(f"{p}: no such file") from None
    except InspectorError as e:
        raise ModelLoadError(str(e)) from None
    with open(fd, "rb", buffering=0, closefd=True) as fh:
        try:
            size = os.fstat(fd).st_size
            _check_head(p, fd, size)
        except OSError as e:
            raise ModelLoadError(f"{p}: cannot read: {e.strerror or e}") from None
        with mapped(fd, size) as view:
            if view is not None:
                yield view
                return
        try:
            data = buffer.read(fh) if buffer is not None else fh.read()
        except OSError as e:
            raise ModelLoadError(f"{p}: cannot read: {e.strerror or e}") from None
        if not data:
            raise ModelLoadError(f"{p}: empty file")
        yield data


def _check_head(p: Path, fd: int, size: int) -> None:
    """Refuse a file by its size, and a binary file by its first byte: what protobuf would refuse after reading it
    all (field 0, or wire type 6 or 7): a 2 GiB sparse file took 2.1 GB of memory and 13 s to be refused that way."""
    if size > MAX_MODEL_BYTES:
        raise ModelLoadError(f"{p}: {size / (1 << 30):.1f} GiB, larger than any ONNX protobuf can be (2 GiB; "
                             "larger models keep their weights as external data)")
    head = os.pread(fd, 1, 0)
    if head and (head[0] & 7 in (6, 7) or head == b"\x00") and p.suffix.lower() not in TEXT_SUFFIXES:
        raise ModelLoadError(f"{p}: not an ONNX file (byte 0 is 0x{head[0]:02x}: neither a protobuf field "
                             "nor text syntax)")


def _looks_like_text_syntax(p: Path, data: bytes | memoryview) -> bool:
    if p.suffix.lower() in TEXT_SUFFIXES:
        return True
    head = bytes(data[:64]).lstrip()
    return head.startswith(b"<") and b"\x00" not in bytes(data[:4096])


def parse_text_model(data: bytes, label: str) -> onnx.ModelProto:
    """Parse ONNX text syntax (``<ir_version: 10, ...> graph (...) => (...) {...}``)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ModelLoadError(f"{label}: not UTF-8 text, so not ONNX text syntax") from None
    if text.lstrip().startswith(("{", "[")):
        raise ModelLoadError(f"{label}: looks like JSON, not an ONNX model")
    if text_nesting(text) > MAX_TEXT_NESTING:
        raise ModelLoadError(f"{label}: invalid ONNX text syntax: brackets nested more than {MAX_TEXT_NESTING} deep")
    try:
        import onnx.parser

        proto = onnx.parser.parse_model(text)
    except Exception as e:  # onnx.parser.ParseError and protobuf errors from the C++ round trip
        raise ModelLoadError(f"{label}: invalid ONNX text syntax: {_reason(e)}") from None
    _check_model_shape(proto, label)
    return proto


def text_nesting(text: str) -> int:
    """How deep ``()``, ``[]`` and ``{}`` nest in ONNX text syntax, outside string literals and comments; unbalanced
    closers count as nothing. Linear, with one Python step per bracket only when the text holds enough of them."""
    if text.count("(") + text.count("[") + text.count("{") <= MAX_TEXT_NESTING:
        return 0  # cannot nest deeper than the bound: nothing to count
    depth = deepest = 0
    # what can hold a bracket that is not one: a string literal (with escapes) and a comment to the end of its line
    # (compiled here, for a text model with that many brackets: start-up)
    tokens = re.compile(r'"(?:[^"\\]|\\.)*"|#[^\n]*|[()\[\]{}]')
    for m in tokens.finditer(text):
        c = m.group()
        if c in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in ")]}":
            depth = max(depth - 1, 0)
    return deepest


def _reason(e: Exception) -> str:
    """One printable line from an exception whose message may be bytes with newlines and quotes the file's own
    bytes (onnx.parser): control characters are shown escaped, never sent."""
    arg = e.args[0] if e.args else type(e).__name__
    text = arg.decode("utf-8", "replace") if isinstance(arg, bytes) else str(arg)
    text = " ".join(text.replace("Error context:", ";").split())
    return one_line(text, 300) or type(e).__name__


def parse_binary_model(data: bytes | memoryview, label: str, progress: Progress | None = None) -> onnx.ModelProto:
    """Parse a serialized ModelProto, allowing deep nesting without risking the interpreter's stack.
    ``progress``: as for ``load_model``."""
    stripped = _first_byte(data)
    if stripped in (b"{", b"["):
        raise ModelLoadError(f"{label}: looks like JSON, not an ONNX model")
    parsed = _parse_in_pieces(data, progress) if progress is not None and len(data) > PIECEWISE_BYTES else None
    proto = parsed or onnx.ModelProto()
    try:
        if parsed is None:
            proto.ParseFromString(data)
    except DecodeError as e:
        if "MaxDepth" not in str(e):
            raise ModelLoadError(f"{label}: not a valid ONNX protobuf (corrupt or truncated file)") from None
        proto = _parse_deep(data, label)
    except Exception as e:  # e.g. RuntimeError from an oversized message
        raise ModelLoadError(f"{label}: not a valid ONNX protobuf ({type(e).__name__})") from None
    _check_model_shape(proto, label)
    return proto


def _first_byte(data: bytes | memoryview) -> bytes:
    """The first byte that is not ASCII white space (b"" when there is none)."""
    for start in range(0, len(data), 4096):
        head = bytes(data[start:start + 4096]).lstrip()
        if head:
            return head[:1]
    return b""


def _parse_in_pieces(data: bytes | memoryview, progress: Progress) -> onnx.ModelProto | None:
    """Parse ``data`` with the main graph's fields merged ``_PIECE_BYTES`` at a time, cut at field boundaries:
    protobuf defines merging the pieces of a message in order to give the message parsed whole. ``progress`` is
    called after each piece; what it raises goes to the caller. None when the file does not scan or a piece does
    not parse (the whole-file parse then says why)."""
    proto = onnx.ModelProto()
    total = len(data)
    try:
        done = 0
        for number, wire, first, payload, end in _fields(data, 0, total):
            if number != 7 or wire != 2:  # ModelProto.graph
                continue
            proto.MergeFromString(data[done:first])
            proto.graph.SetInParent()
            piece = payload
            for _number, _wire, _first, _payload, field_end in _fields(data, payload, end):
                if field_end - piece >= _PIECE_BYTES:
                    proto.graph.MergeFromString(data[piece:field_end])
                    piece = field_end
                    _checkpoint(progress, piece, total)
            proto.graph.MergeFromString(data[piece:end])
            done = end
        proto.MergeFromString(data[done:])
    except _Stopped as stopped:
        raise stopped.error from None
    except Exception:  # a malformed key or length, a DecodeError, a depth limit
        return None
    progress(total, total)
    return proto


class _Stopped(Exception):
    """What ``progress`` raised, carried past the parse's own error handling."""

    def __init__(self, error: Exception) -> None:
        super().__init__(error)
        self.error = error


def _checkpoint(progress: Progress, done: int, total: int) -> None:
    try:
        progress(done, total)
    except Exception as e:
        raise _Stopped(e) from e


def _fields(data: bytes | memoryview, start: int, end: int) -> Iterator[tuple[int, int, int, int, int]]:
    """(field number, wire type, start, payload start, end) of each field of the message in ``data[start:end]``;
    ValueError where the bytes are not protobuf's wire format."""
    pos = start
    while pos < end:
        first = pos
        key, pos = _varint(data, pos)
        wire = key & 7
        payload = pos
        if wire == 0:
            _value, pos = _varint(data, pos)
        elif wire == 1:
            pos += 8
        elif wire == 2:
            size, payload = _varint(data, pos)
            pos = payload + size
        elif wire == 5:
            pos += 4
        else:
            raise ValueError("unsupported wire type")
        if pos > end:
            raise ValueError("field beyond the message")
        yield key >> 3, wire, first, payload, pos


def _varint(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    value = shift = 0
    while shift < 64:
        if pos >= len(data):
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
    raise ValueError("varint too long")


def _parse_deep(data: bytes | memoryview, label: str) -> onnx.ModelProto:
    """Parse a model nested deeper than upb's default limit, on a thread with a large stack."""
    result: list[onnx.ModelProto] = []
    errors: list[str] = []

    def work() -> None:
        from google._upb import _message as upb_message  # upb is protobuf's default backend

        proto = onnx.ModelProto()
        upb_message.SetAllowOversizeProtos(True)
        try:
            proto.ParseFromString(data)
            result.append(proto)
        except Exception as e:
            errors.append(str(e))
        finally:
            upb_message.SetAllowOversizeProtos(False)

    import threading  # (here: the rare deep model; start-up)

    with _deep_lock:
        old = threading.stack_size()
        try:
            threading.stack_size(_DEEP_STACK_BYTES)
            t = threading.Thread(target=work, name="deep-onnx-parse")
            t.start()
        except (ImportError, RuntimeError, ValueError):
            raise ModelLoadError(f"{label}: nested too deeply to parse on this system") from None
        finally:
            threading.stack_size(old)
        t.join()
    if not result:
        if any("MaxDepth" in e for e in errors):
            raise ModelLoadError(
                f"{label}: nested deeper than protobuf can read ({MAX_MESSAGE_DEPTH:,} message levels, about "
                f"{MAX_MESSAGE_DEPTH // 3:,} nested subgraphs); the file may be valid, but it cannot be opened")
        raise ModelLoadError(f"{label}: not a valid ONNX protobuf (corrupt or truncated file)")
    return result[0]


def _check_model_shape(proto: onnx.ModelProto, label: str) -> None:
    """Random bytes can decode as a protobuf; insist on what every ONNX model has."""
    if not proto.HasField("graph") and not proto.functions:
        raise ModelLoadError(f"{label}: not an ONNX model (no graph)")
    if proto.ir_version <= 0 or proto.ir_version > 1000:
        raise ModelLoadError(f"{label}: not an ONNX model (missing or invalid ir_version)")
    if not proto.opset_import and not proto.functions:
        raise ModelLoadError(f"{label}: not an ONNX model (no opset_import)")
