"""A protobuf message's wire format in pieces of about a megabyte: byte for byte what ``SerializeToString`` makes.

Why: ``SerializeToString`` of a folded 100k-node export encodes 130 MB into an arena that doubles as it grows and
then copies the whole into one ``bytes``: 0.8 s, most of it 129k page faults of fresh memory, and 260 MB more at
the peak, to write a file that the kernel then copies again. Encoded in pieces, each entry of a repeated message
field (a node, a function, a value info) is measured (``ByteSize``, which writes nothing) for the length its field
needs in front, then encoded into a small buffer that the next piece reuses: 0.2 s and 30k faults less. Written
into a file (``fileio.write_atomic``), each entry is encoded once and the graph's length written in its place
afterwards (``Encoded.once``): measuring every node first took a third of the encoding.

The write side of ``loader``'s piecewise parse. Nothing here reads a string of the model: entries are copied as
protobuf encodes them. A message carrying fields this protobuf does not know (unknown fields, which protobuf
encodes after the known ones) is encoded whole, as are messages nested deeper than the model's graph.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

from google.protobuf.message import Message
from google.protobuf.unknown_fields import UnknownFieldSet

PIECE_BYTES = 1 << 20  # a piece is at least this long (one entry may make it longer), the last one aside
_LENGTH_DELIMITED = 2
_SPLIT_DEPTH = 2  # the model, and a message field of it (the graph), are split; deeper messages are encoded whole
_SAMPLE = 32  # one entry in this many is measured to estimate a split message's length (``Encoded.once``)
_MEASURED = 1024  # repeated fields of at most this many entries are measured whole for the estimate


def encoded(message: Message) -> Encoded:
    """``message.SerializeToString()`` in pieces, in order; their concatenation is the same bytes (``Encoded``)."""
    return Encoded(message)


class Encoded:
    """A message's wire format to be written. Iterated, its pieces in order: every entry of a split field is measured
    (``ByteSize``) before anything is written, as the length of the message holding it comes first, and encoded when
    its turn comes, so it is encoded twice. ``once`` makes the same bytes encoding each entry once, for a file that
    can be written again where a length goes (``fileio.write_atomic``): the length of a split message (the graph) is
    written as zeros of the width its estimate needs, and ``patches`` says, once the pieces are done, what goes
    there, or is None when the estimate's width was wrong and the file must be written again from the pieces. At 100k
    nodes the measuring took 0.13 s (0.116 s for the 80k nodes of the folded Llama replica, CPU) of the 0.41 s."""

    __slots__ = ("message", "patches")

    def __init__(self, message: Message) -> None:
        self.message = message
        self.patches: list[tuple[int, bytes]] | None = []

    def __iter__(self) -> Iterator[bytes]:
        parts: list[bytes | _Entries] = []
        _plan(self.message, parts, 0)
        return _pieces(parts)

    def once(self) -> Iterator[bytes]:
        """The same bytes as the pieces, each entry encoded once; ``patches`` is complete when this is exhausted."""
        pieces = _Pieces()
        patches: list[tuple[int, bytes]] | None = []
        opened: list[tuple[int, int]] = []  # per split message open: where its length goes, and its width
        for part in _once_parts(self.message, 0):
            if type(part) is bytes:
                pieces.add(part)
            elif type(part) is _Open:
                pieces.add(bytes(part.width))
                opened.append((pieces.offset - part.width, part.width))
            elif type(part) is _Close:
                at, width = opened.pop()
                length = _varint(pieces.offset - at - width)
                if len(length) != width:
                    patches = None
                elif patches is not None:
                    patches.append((at, length))
            elif type(part) is _Repeated:
                heads: dict[int, bytes] = {}
                tag, batch, size = part.tag, pieces.batch, pieces.size
                for data in map(type(part.entries[0]).SerializeToString, part.entries):
                    n = len(data)
                    head = heads.get(n)
                    if head is None:
                        head = heads[n] = tag + _varint(n)
                    batch.append(head)
                    batch.append(data)
                    size += len(head) + n
                    if size >= PIECE_BYTES:
                        pieces.size = size
                        yield pieces.take()
                        size = 0
                pieces.size = size
                continue
            if pieces.full():
                yield pieces.take()
        if pieces.batch:
            yield pieces.take()
        self.patches = patches


class _Pieces:
    """Bytes gathered into pieces of at least ``PIECE_BYTES``, and how many bytes came before the next one."""

    __slots__ = ("batch", "size", "taken")

    def __init__(self) -> None:
        self.batch: list[bytes] = []
        self.size = 0  # of ``batch``
        self.taken = 0  # of the pieces taken

    @property
    def offset(self) -> int:
        return self.taken + self.size

    def add(self, data: bytes) -> None:
        self.batch.append(data)
        self.size += len(data)

    def full(self) -> bool:
        return self.size >= PIECE_BYTES

    def take(self) -> bytes:
        piece = b"".join(self.batch)
        self.batch.clear()
        self.taken += self.size
        self.size = 0
        return piece


class _Repeated(NamedTuple):
    """The entries of one repeated message field, and its tag."""

    tag: bytes
    entries: list[Message]


class _Open(NamedTuple):
    """A split message begins: its length goes here, ``width`` bytes wide."""

    width: int


class _Close(NamedTuple):
    """The split message last opened ends."""


def _once_parts(message: Message, depth: int) -> Iterator[bytes | _Open | _Close | _Repeated]:
    """``_plan``'s parts without measuring: bytes, the entries of a repeated message field (tag, entries), and where a
    split message field opens (with its estimated length's width) and closes."""
    if depth >= _SPLIT_DEPTH or len(UnknownFieldSet(message)):
        yield message.SerializeToString()
        return
    for desc, value in message.ListFields():  # in field-number order, as protobuf encodes them
        if desc.type == desc.TYPE_MESSAGE and desc.is_repeated and not _is_map(desc):
            yield _Repeated(_varint(desc.number << 3 | _LENGTH_DELIMITED), list(value))
        elif desc.type == desc.TYPE_MESSAGE and not desc.is_repeated:
            yield _varint(desc.number << 3 | _LENGTH_DELIMITED)
            yield _Open(_width(value, depth + 1))
            yield from _once_parts(value, depth + 1)
            yield _Close()
        else:
            yield _alone(message, desc, value)


def _width(message: Message, depth: int) -> int:
    """The width of ``message``'s length: from its estimate, unless a third more or a quarter less would change it
    (then measured)."""
    estimate = _estimate(message, depth)
    width = len(_varint(estimate))
    if len(_varint(estimate * 3 // 4)) == width == len(_varint(estimate * 4 // 3)):
        return width
    return len(_varint(message.ByteSize()))


def _estimate(message: Message, depth: int) -> int:
    """About the encoded length of ``message``: a repeated message field of more than ``_MEASURED`` entries from one
    entry in ``_SAMPLE`` (measured), the rest measured."""
    if depth >= _SPLIT_DEPTH or len(UnknownFieldSet(message)):
        return message.ByteSize()
    total = 0
    for desc, value in message.ListFields():
        if desc.type == desc.TYPE_MESSAGE and desc.is_repeated and not _is_map(desc):
            sample = value[::_SAMPLE] if len(value) > _MEASURED else value
            total += round(sum(map(type(sample[0]).ByteSize, sample)) * len(value) / len(sample)) + 3 * len(value)
        elif desc.type == desc.TYPE_MESSAGE and not desc.is_repeated:
            total += _estimate(value, depth + 1) + 6
        else:
            total += len(_alone(message, desc, value))
    return total


def _pieces(parts: list[bytes | _Entries]) -> Iterator[bytes]:
    batch: list[bytes] = []
    size = 0
    for part in parts:
        if isinstance(part, bytes):
            batch.append(part)
            size += len(part)
        else:
            tag, entries, sizes = part
            heads: dict[int, bytes] = {}
            encode = type(entries[0]).SerializeToString
            for entry, n in zip(entries, sizes, strict=True):
                head = heads.get(n)
                if head is None:
                    head = heads[n] = tag + _varint(n)
                data = encode(entry)
                if len(data) != n:  # the message changed while it was written: never a file with wrong lengths
                    raise RuntimeError("a message changed while it was being encoded")
                batch.append(head)
                batch.append(data)
                size += len(head) + n
                if size >= PIECE_BYTES:
                    yield b"".join(batch)
                    batch.clear()
                    size = 0
            continue
        if size >= PIECE_BYTES:
            yield b"".join(batch)
            batch.clear()
            size = 0
    if batch:
        yield b"".join(batch)


# the entries of one repeated message field: their tag, the entries, and each one's encoded length
_Entries = tuple[bytes, list[Message], list[int]]


def _plan(message: Message, parts: list[bytes | _Entries], depth: int) -> int:
    """Append the parts of ``message``'s encoding to ``parts`` (bytes, or the entries of a repeated message field,
    encoded when their turn comes); return their length."""
    if depth >= _SPLIT_DEPTH or len(UnknownFieldSet(message)):
        whole = message.SerializeToString()
        parts.append(whole)
        return len(whole)
    total = 0
    for desc, value in message.ListFields():  # in field-number order, as protobuf encodes them
        if desc.type == desc.TYPE_MESSAGE and desc.is_repeated and not _is_map(desc):
            tag = _varint(desc.number << 3 | _LENGTH_DELIMITED)
            entries = list(value)
            sizes = list(map(type(entries[0]).ByteSize, entries))  # measured, nothing written (in C)
            # each entry's tag and length in front of it: a varint takes one byte more from 2**7, 2**14, ...
            heads = len(entries) * (len(tag) + 1) + sum(sum(map((1 << k).__le__, sizes)) for k in (7, 14, 21, 28))
            parts.append((tag, entries, sizes))
            total += heads + sum(sizes)
        elif desc.type == desc.TYPE_MESSAGE and not desc.is_repeated:
            head_at = len(parts)
            parts.append(b"")  # the field's tag and length, once the length is known
            n = _plan(value, parts, depth + 1)
            head = _varint(desc.number << 3 | _LENGTH_DELIMITED) + _varint(n)
            parts[head_at] = head
            total += len(head) + n
        else:  # scalars, strings, repeated scalars, maps: this one field alone, as protobuf encodes it
            data = _alone(message, desc, value)
            parts.append(data)
            total += len(data)
    return total


def _alone(message: Message, desc: Any, value: Any) -> bytes:
    """One field of ``message`` (not a split one) as protobuf encodes it."""
    alone = type(message)()
    _set(alone, desc, value)
    return alone.SerializeToString()


def _is_map(desc: Any) -> bool:
    entry = desc.message_type
    return bool(entry is not None and entry.GetOptions().map_entry)


def _set(target: Message, desc: Any, value: Any) -> None:
    if desc.is_repeated:
        getattr(target, desc.name).extend(value) if not _is_map(desc) else getattr(target, desc.name).update(value)
    else:
        setattr(target, desc.name, value)


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
