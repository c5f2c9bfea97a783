"""A protobuf message's wire format in pieces of about a megabyte: byte for byte what ``SerializeToString`` makes.

Why: ``SerializeToString`` of a folded 100k-node export encodes 130 MB into an arena that doubles as it grows and
then copies the whole into one ``bytes``: 0.8 s, most of it 129k page faults of fresh memory, and 260 MB more at
the peak, to write a file that the kernel then copies again. Encoded in pieces, each entry of a repeated message
field (a node, a function, a value info) is measured (``ByteSize``, which writes nothing) for the length its field
needs in front, then encoded into a small buffer that the next piece reuses: 0.2 s and 30k faults less.

The write side of ``loader``'s piecewise parse. Nothing here reads a string of the model: entries are copied as
protobuf encodes them. A message carrying fields this protobuf does not know (unknown fields, which protobuf
encodes after the known ones) is encoded whole, as are messages nested deeper than the model's graph.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from google.protobuf.message import Message
from google.protobuf.unknown_fields import UnknownFieldSet

PIECE_BYTES = 1 << 20  # a piece is at least this long (one entry may make it longer), the last one aside
_LENGTH_DELIMITED = 2
_SPLIT_DEPTH = 2  # the model, and a message field of it (the graph), are split; deeper messages are encoded whole


def encoded(message: Message) -> Iterator[bytes]:
    """``message.SerializeToString()`` in pieces, in order; their concatenation is the same bytes."""
    parts: list[bytes | _Entries] = []
    _plan(message, parts, 0)
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
            alone = type(message)()
            _set(alone, desc, value)
            data = alone.SerializeToString()
            parts.append(data)
            total += len(data)
    return total


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
