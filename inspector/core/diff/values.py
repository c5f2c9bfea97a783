"""Values as the diff stores and words them: tensor digests and summaries, and ``show_value``, the one-line form
of a value that ``Change.detail`` (part of the JSON format) and every diff renderer use."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from onnx import TensorProto

from inspector.core.bodies.literals import MAX_SHOWN_ELEMENTS, tensor_summary_text, tensor_value
from inspector.core.model.tensor_sizes import dtype_name
from inspector.core.util.digest import blake2b
from inspector.core.util.floats import float_text


def same_content(t: TensorProto, u: TensorProto) -> bool:
    """Same dtype, shape and content (external data compared by location/offset/length; never read)."""
    if t.data_type != u.data_type or t.dims != u.dims:
        return False
    if t.raw_data and u.raw_data:
        return bool(t.raw_data == u.raw_data)
    if t.data_location == TensorProto.EXTERNAL and u.data_location == TensorProto.EXTERNAL \
            and t.external_data == u.external_data:
        return True
    return content_digest(t) == content_digest(u)


def content_digest(t: TensorProto) -> str:
    """Digest of a tensor's content: its raw bytes, or the decoded values; for external data the location,
    offset and length (the file is never read)."""
    if t.data_location == TensorProto.EXTERNAL:
        info = {e.key: e.value for e in t.external_data}
        return "ext:" + "|".join(f"{k}={info.get(k, '')}" for k in ("location", "offset", "length"))
    if t.raw_data:
        return blake2b(t.raw_data, digest_size=12).hexdigest()
    from inspector.core.util.plain_tensors import plain_tensor  # (here: a tensor without raw bytes; start-up)

    plain = plain_tensor(t)  # without numpy (start-up): the same bytes
    if plain is not None:
        return blake2b(plain.data, digest_size=12).hexdigest()
    import numpy as np
    from onnx import numpy_helper

    try:
        data = np.ascontiguousarray(numpy_helper.to_array(t)).tobytes()
    except Exception:
        copy = TensorProto()
        copy.CopyFrom(t)
        copy.name = ""
        copy.doc_string = ""
        data = copy.SerializeToString(deterministic=True)
    return blake2b(data, digest_size=12).hexdigest()


def tensor_type(t: TensorProto) -> str:
    return f"{dtype_name(t.data_type)}[{', '.join(str(d) for d in t.dims)}]"


def tensor_summary(t: TensorProto) -> Any:
    """Small tensors as values; larger ones as dtype, shape and digest (external ones: where the data is)."""
    if t.data_location == TensorProto.EXTERNAL:
        info = {e.key: e.value for e in t.external_data}
        return {"dtype": dtype_name(t.data_type), "shape": [int(d) for d in t.dims], "external": info}
    numel = math.prod(t.dims)
    if numel <= 16:
        value, _key = tensor_value(t)
        return unwrap(value)
    return {"dtype": dtype_name(t.data_type), "shape": [int(d) for d in t.dims], "digest": content_digest(t)[:16]}


# Elements compared one by one at most (pure Python, no numpy at start-up: 65,536 floats take ~10 ms); a larger
# tensor that changed keeps its digests alone
MAX_COMPARED = 1 << 16


def value_difference(t: TensorProto, u: TensorProto) -> str:
    """Where two in-file tensors of one element type and shape differ, for a tensor too large to show whole (more than
    ``MAX_SHOWN_ELEMENTS``): ``24 of 32 values differ, the most at [0, 0, 7, 1]: 0.7539058 -> 0.74893439``. The
    first values a summary shows may all be equal (GPT-NeoX's rotary tables with another base: the eight shown read
    alike but for one); this says how many differ and the largest difference. "" for anything else: a small tensor
    (its values are shown), external data (never read), another type or shape, or more than ``MAX_COMPARED``."""
    from inspector.core.util.plain_tensors import plain_tensor  # (here: a tensor read; start-up)

    if t.data_type != u.data_type or list(t.dims) != list(u.dims):
        return ""
    a, b = plain_tensor(t), plain_tensor(u)
    if a is None or b is None or not MAX_SHOWN_ELEMENTS < a.count <= MAX_COMPARED or a.data == b.data:
        return ""
    xs, ys = a.first(a.count), b.first(b.count)
    differ, worst, at = 0, -1.0, 0
    for k, (x, y) in enumerate(zip(xs, ys)):
        if x == y or (x != x and y != y):  # (equal, or NaN on both sides)
            continue
        differ += 1
        gap = abs(float(x) - float(y))
        gap = math.inf if gap != gap else gap
        if gap > worst:
            worst, at = gap, k
    index, rest = [], at
    for d in reversed(a.shape):
        index.append(rest % d)
        rest //= d
    return (f"{differ} of {a.count} values differ, the most at {list(reversed(index))}: {_show(xs[at])} -> "
            f"{_show(ys[at])}")


def external_difference(t: TensorProto, folder_t: Path, u: TensorProto, folder_u: Path) -> str:
    """``value_difference`` of two tensors held as external data, read from inside each model's folder
    (``tensors.read_tensor``) where they have at most ``MAX_COMPARED`` elements; "" otherwise, or when either cannot
    be read."""
    from onnx import numpy_helper  # (here: external data read; start-up)

    from inspector.core.model.tensors import read_tensor
    from inspector.core.util.errors import InspectorError

    if t.data_type != u.data_type or list(t.dims) != list(u.dims) or math.prod(t.dims) > MAX_COMPARED:
        return ""
    try:
        a, b = read_tensor(t, folder_t), read_tensor(u, folder_u)
        return value_difference(numpy_helper.from_array(a, t.name), numpy_helper.from_array(b, u.name))
    except (InspectorError, ValueError, TypeError):
        return ""


def changed_text(old: Any, new: Any, difference: str, typed: bool = False) -> str:
    """``old -> new`` as a diff's detail says it; with a ``difference`` (``value_difference``), the summaries' digests
    and the difference instead of their first values (``typed``: the detail names the type already)."""
    if not difference or not isinstance(old, dict) or not isinstance(new, dict):
        return f"{show_value(old)} -> {show_value(new)}"
    head = _held(old) if typed else tensor_summary_text({**old, "first": None})
    return f"{head} -> {_held(new)}: {difference}"


def _held(summary: dict[str, Any]) -> str:
    """Where a tensor summary's values are: its digest (``#1ed5b974``), or for external data its file and offset."""
    ext = summary.get("external")
    if "digest" not in summary and isinstance(ext, dict):
        return f"@{ext.get('location', '?')}+{ext.get('offset', '0')}"
    return f"#{str(summary.get('digest', ''))[:8]}"


def renamed_text(a: str, b: str) -> str:
    return a if a == b else f"{a} (now {b})"


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def unwrap(v: Any) -> Any:
    """One-element tensors read as scalars: ``[0.59460354]`` -> ``0.59460354``."""
    while isinstance(v, list) and len(v) == 1 and not isinstance(v[0], dict):
        v = v[0]
    return v


def short(v: Any, width: int = 60) -> str:
    text = "(none)" if v is None else repr(v)
    return text if len(text) <= width else text[: width - 1] + "…"


def show_value(v: Any, width: int = 80) -> str:
    """A value as one short line: floats with 8 significant digits, lists in brackets, summaries compact."""
    text = _show(v)
    return text if len(text) <= width else text[: width - 1] + "…"


def _show(v: Any) -> str:
    if v is None:
        return "(none)"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, float):
        return float_text(v)
    if isinstance(v, list):
        return "[" + ", ".join(_show(x) for x in v) + "]"
    if isinstance(v, dict):
        tensor = tensor_summary_text(v)
        if tensor is not None:
            ext = v.get("external")
            if "digest" not in v and isinstance(ext, dict):
                tensor += f" @{ext.get('location', '?')}+{ext.get('offset', '0')}"
            return tensor
        return "{" + ", ".join(f"{k}: {_show(x)}" for k, x in v.items()) + "}"
    return str(v)
