"""Details of one ONNX node: attributes, typed inputs/outputs, metadata, stack trace, operator docs, tensors, as rich
text built from escaped parts (``gui.text.tag``): every name, value and metadata string of the model is shown as
text, never as markup."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping

import numpy as np
import onnx
from PySide6.QtGui import QTextDocument

from inspector.core.bodies.literals import attribute_value
from inspector.core.model.index import ModelIndex
from inspector.core.model.tensors import tensor_facts
from inspector.core.specialise.categories import value_text
from inspector.core.util.floats import float_text
from inspector.gui.text import BR, Rich, esc, pre, rich, tag

PREVIEW_ELEMENTS = 12
STATS_SAMPLE = 1 << 20  # statistics over at most this many values (64 evenly spaced blocks of a larger tensor)
MAX_ATTRIBUTE_TEXT = 2000  # an attribute value in the panel, cut with an ellipsis beyond (a long list of ints)


def _element_text(v: object, dtype: np.dtype) -> str:
    """One element of a preview: a float by the fewest digits that give it back in its own type (float32 as the
    Signature tab writes it; float16's 0.1 is ``0.1``, where float32's shortest text made it ``0.099975586``; a
    bfloat16's likewise, which numpy writes with 6 digits), a double by its shortest repr, anything else as is."""
    if not isinstance(v, float):
        return str(v)
    if dtype == np.float32:
        return float_text(v)
    if dtype.itemsize >= 8 or not math.isfinite(v) or (v.is_integer() and abs(v) < 1e6):
        return repr(v)  # (a whole number as such: float16's largest, 65504.0, not the 6.55e+04 of its 3 digits)
    with np.errstate(all="ignore"):  # (a rounding beyond a float8's range is one more try, not a warning)
        for digits in range(1, 10):  # (float16, bfloat16, float8: a few digits give each back)
            text = f"{v:.{digits}g}"
            if float(np.array(float(text)).astype(dtype)) == v:
                return text
    return repr(v)


def operator_doc(index: ModelIndex, node: onnx.NodeProto) -> str:
    """The operator's documentation for the model's opset of its domain (empty for local functions)."""
    domain = node.domain if node.domain != "ai.onnx" else ""
    version = next((o.version for o in index.proto.opset_import if o.domain == domain), None)
    try:
        if version is None:
            schema = onnx.defs.get_schema(node.op_type, domain)
        else:
            schema = onnx.defs.get_schema(node.op_type, version, domain)
    except Exception:
        return ""
    doc = textwrap.dedent(schema.doc or "").strip()  # onnx indents some docs as a whole (LayerNormalization)
    return f"{schema.name} (since opset {schema.since_version}, domain '{schema.domain or 'ai.onnx'}')\n\n{doc}"


def tensor_preview(array: np.ndarray) -> str:
    flat = array.reshape(-1)
    first = ", ".join(_element_text(v, array.dtype) for v in flat[:PREVIEW_ELEMENTS].tolist())
    more = " …" if flat.size > PREVIEW_ELEMENTS else ""
    stats = ""
    real = np.issubdtype(array.dtype, np.number) and not np.issubdtype(array.dtype, np.complexfloating)
    if flat.size and (real or array.dtype.name.startswith(("bfloat", "float"))):  # (ml_dtypes' floats: no np.number)
        if flat.size <= STATS_SAMPLE:
            sample, over = flat, "1 value" if flat.size == 1 else f"all {flat.size:,} values"
        else:  # bounded memory: a float64 copy of a sample, never of the whole tensor
            block = STATS_SAMPLE // 64
            starts = np.linspace(0, flat.size - block, 64).astype(np.int64)
            sample = np.concatenate([flat[s:s + block] for s in starts.tolist()])
            over = f"a sample of {sample.size:,} of {flat.size:,} values"
        with np.errstate(all="ignore"):  # NaN, inf and overflow are shown, not warned about
            f = sample.astype(np.float64)
            finite = f[np.isfinite(f)]
            if finite.size:
                stats = (f"  min {finite.min():.6g}  max {finite.max():.6g}  mean {finite.mean():.6g}  "
                         f"std {finite.std():.6g}")
        odd = f.size - finite.size
        stats += (f"  {odd:,} NaN/inf" if odd else "") + f" ({over})"
    return f"[{first}{more}]{stats}"


def node_html(index: ModelIndex, node: onnx.NodeProto, where: str, types: Mapping[str, str],
              initializers: Mapping[str, onnx.TensorProto], previews: Mapping[str, str]) -> Rich:
    """``previews`` maps initializer names to already-read value previews; others get a 'load values' link."""
    parts = [tag("h2", node.op_type, " ", tag("small", node.name or "(unnamed)")), tag("p", where)]
    if node.domain or node.overload:
        parts.append(tag("p", "domain ", tag("code", node.domain),
                         rich(", overload ", tag("code", node.overload)) if node.overload else ""))
    if node.attribute:
        rows = []
        for a in node.attribute:
            if a.ref_attr_name:
                shown = f"@{a.ref_attr_name} (parametric)"
            elif a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
                shown = "subgraph"
            else:
                shown = value_text(attribute_value(a)[0], MAX_ATTRIBUTE_TEXT)  # (as the Signature tab and boxes)
            rows.append(tag("tr", tag("td", tag("b", a.name)), tag("td", tag("code", shown))))
        parts += [tag("h3", "Attributes"), tag("table", *rows, cellspacing=4)]
    for title, names in (("Inputs", node.input), ("Outputs", node.output)):
        cells: list[Rich] = []
        for name in names:
            extra = rich()
            init = initializers.get(name)
            if init is not None:
                facts = tensor_facts(init)
                where_from = f"external: {facts.location}" if facts.external else "initializer"
                preview = previews.get(name)
                extra = rich(BR, tag("small", f"{where_from}, {facts.nbytes:,} bytes: ",
                                     preview or tag("a", "load values", href=f"tensor:{name}")))
            cells.append(tag("tr", tag("td", tag("code", name or "(none)")), tag("td", types.get(name, ""), extra)))
        parts += [tag("h3", title), tag("table", *cells, cellspacing=4)]
    meta = [(p.key, p.value) for p in node.metadata_props]
    trace = next((v for k, v in meta if k.endswith("stack_trace")), "")
    if meta:  # (each value under its key, the panel's width for it: beside keys as long as
        # ``pkg.torch.onnx.class_hierarchy`` a name scope path was a column of a few characters a line)
        parts += [tag("h3", "Metadata"), *(tag("p", tag("b", k), BR, tag("code", v))
                                           for k, v in meta if not k.endswith("stack_trace"))]
    if trace:
        parts += [tag("h3", "Stack trace"), pre(trace)]
    doc = operator_doc(index, node)
    if doc:
        title, _, text = doc.partition("\n\n")
        parts += [tag("h3", "Operator"), tag("p", tag("i", title)), markdown_html(text)]
    return rich(*parts)


def markdown_html(text: str) -> Rich:
    """Markdown (ONNX operator docs) as a Qt rich-text fragment: headings, lists, `code` and code blocks
    rendered; any HTML in the text is shown as text, never interpreted."""
    document = QTextDocument()
    features = QTextDocument.MarkdownFeature(QTextDocument.MarkdownFeature.MarkdownDialectGitHub.value
                                             | QTextDocument.MarkdownFeature.MarkdownNoHTML.value)
    document.setMarkdown(textwrap.dedent(text), features)
    html = document.toHtml()
    start = html.find(">", html.find("<body")) + 1
    end = html.rfind("</body>")
    # Qt's own HTML of a document made with MarkdownNoHTML: any markup in the doc text is in it as text
    return Rich(html[start:end]) if start > 0 and end > start else esc(text)
