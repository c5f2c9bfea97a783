"""Attribute defaults of ONNX operator schemas, for the opset a model imports (read from ``onnx.defs``)."""

from __future__ import annotations

from functools import lru_cache

import onnx
from onnx import AttributeProto

from inspector.core.bodies.literals import attribute_value
from inspector.core.model.onnx_operators import ATTRIBUTE_DEFAULTS, OLDEST_OPSETS


@lru_cache(maxsize=4096)
def default_key(op_type: str, domain: str, attribute: str, opset: int) -> str | None:
    """The canonical key (as ``literals.attribute_value`` gives it) of the schema default, or None if none."""
    if opset <= OLDEST_OPSETS.get(domain, 0):  # what every supported onnx says, without its schema registry
        found = None
        for since, keys in ATTRIBUTE_DEFAULTS.get((domain, op_type), ()):
            if since <= opset:
                found = keys.get(attribute)
        return found
    import onnx.defs  # (an explicit import: see util/onnxpkg.py)

    try:
        schema = onnx.defs.get_schema(op_type, opset, domain)
    except Exception:  # unknown operator or domain, or an opset the installed onnx does not know
        return None
    attr = schema.attributes.get(attribute)
    if attr is None or attr.default_value.type == AttributeProto.UNDEFINED:
        return None
    return attribute_value(attr.default_value)[1]


def is_default(op_type: str, domain: str, attribute: str, key: str, opset: int | None) -> bool:
    """True when an attribute with canonical ``key`` equals its operator's default for ``opset``."""
    if opset is None:
        return False
    want = default_key(op_type, "" if domain == "ai.onnx" else domain, attribute, opset)
    return want is not None and want == key


def model_opsets(model: onnx.ModelProto) -> dict[str, int]:
    """Opset version per domain ("" for the default ONNX domain)."""
    return {("" if o.domain == "ai.onnx" else o.domain): int(o.version) for o in model.opset_import}
