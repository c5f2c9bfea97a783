"""The categories of specialised values: one definition of what each means, how it is named, coloured and explained.

Every view (the app's signature panel and graph, HTML, Markdown and JSON reports) shows a specialised value in one
of five categories, decided in this order:

- ``parametric``: an attribute bound through ``ref_attr_name``; the body is generic and the value sits at each call
  site (listed per call site), so there is nothing to compare or link inside the body;
- ``varies``: the value differs between bodies of one template in its family;
- ``shape_specialised``: computed from an input shape at trace time (a Reshape target, the default SDPA scale from
  the head dim): it would be wrong for another shape;
- ``linked``: it derives from a non-tensor aten argument (the link names its evidence);
- ``lone``: a literal of a body with no sibling of its template to compare with.

Pure Python and no Qt: colours are hex strings, drawn with black text (``TEXT_COLOUR``) in light and dark themes.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Any

from inspector.core.bodies.literals import tensor_summary_text
from inspector.core.util.floats import float_text
from inspector.core.util.units import plural

if TYPE_CHECKING:
    from inspector.core.specialise.links import ArgLink
    from inspector.core.specialise.specialiser import SpecialisedValue

TEXT_COLOUR = "#000000"  # text drawn on a category's colour, in light and dark themes alike
MAX_VALUE_TEXT = 160
MAX_CALLS_EXPLAINED = 12  # call sites a tooltip lists for a parametric value


class Category(str, Enum):
    """A specialised value's category; its value is the string used in JSON, CSS classes and element ids."""

    VARIES = "varies"
    SHAPE = "shape_specialised"
    LINKED = "linked"
    LONE = "lone"
    PARAMETRIC = "parametric"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    @property
    def label(self) -> str:
        """Short text for legends and tables."""
        return _LABELS[self]

    @property
    def colour(self) -> str:
        """Highlight colour (hex), behind black text."""
        return _COLOURS[self]

    @property
    def icon(self) -> str:
        """Markdown marker (an emoji: Markdown has no colours)."""
        return _ICONS[self]


_LABELS = {
    Category.VARIES: "varies in the family",
    Category.SHAPE: "shape-specialised (wrong for another input shape)",
    Category.LINKED: "from an aten argument",
    Category.LONE: "no sibling to compare",
    Category.PARAMETRIC: "parametric (bound to a function attribute)",
}
_COLOURS = {
    Category.VARIES: "#f6b26b",  # orange
    Category.SHAPE: "#d5a6bd",  # mauve: a reviewer asks whether the shape it was computed from is the only one
    Category.LINKED: "#9fc5e8",  # blue
    Category.LONE: "#ffe599",  # yellow
    Category.PARAMETRIC: "#d9d9d9",  # grey: generic here, the value is at each call site
}
_ICONS = {Category.VARIES: "🟧", Category.SHAPE: "🟪", Category.LINKED: "🟦", Category.LONE: "🟨",
          Category.PARAMETRIC: "▫️"}


def classify(spec: SpecialisedValue) -> Category:
    """The category of ``spec`` (parametric first: such a slot never links, and its "value" is a reference)."""
    if spec.literal.kind == "parametric":
        return Category.PARAMETRIC
    if spec.varies:
        return Category.VARIES
    if spec.shape:
        return Category.SHAPE
    return Category.LINKED if spec.links else Category.LONE


def where(spec: SpecialisedValue) -> str:
    """Where the value sits: ``Op.attribute``, or ``constant NAME (read by Op)`` for a constant input."""
    lit = spec.literal
    if lit.kind == "initializer":
        return f"constant {lit.name}" + (f" (read by {lit.op_type})" if lit.op_type else "")
    return f"{lit.op_type}.{lit.name}" if lit.op_type else lit.name


def short_where(spec: SpecialisedValue) -> str:
    """Where the value sits, in short for the app's lists: ``Op.attribute``, or ``NAME (Op)`` for a constant."""
    lit = spec.literal
    return f"{lit.op_type}.{lit.name}" if lit.kind != "initializer" else f"{lit.name} ({lit.op_type})"


def explain(spec: SpecialisedValue, max_calls: int = MAX_CALLS_EXPLAINED) -> str:
    """Plain text for a tooltip: what the value is, what varies, which aten argument it came from and by which
    evidence, the input shape it was computed from, which trace_only torchlib code put it there, and for a
    parametric attribute the value each call site passes."""
    lit = spec.literal
    if lit.kind == "parametric":
        lines = [f"{lit.op_type}.{lit.name} is parametric: bound to function attribute @{lit.ref}"]
        if spec.call_values:
            lines.append("each call passes its own value (they differ):" if spec.varies
                          else "each call passes its own value:")
            lines += [f"  {call}: {value_text(v)}" for call, v in spec.call_values[:max_calls]]
            if len(spec.call_values) > max_calls:
                lines.append(f"  … {plural(len(spec.call_values) - max_calls, 'more call', 'more calls')}")
        return "\n".join(lines)
    lines = [f"{where(spec)} = {value_text(lit.value)}"]
    if spec.varies:
        lines.append("varies across the family: " + " | ".join(value_text(v) for v in spec.family_values))
    if spec.shape:
        lines.append(f"shape-specialised (wrong for another input shape): {spec.shape}")
    for link in spec.links:
        lines.append(f"from aten argument {link_text(link)}")
    if not spec.varies and not spec.links and not spec.shape:
        lines.append("literal of a body with no sibling to compare with")
    if spec.baked_by:
        lines.append(baked_text(spec.baked_by))
    return "\n".join(lines)


def link_text(link: ArgLink, shown_at: str = "") -> str:
    """``dim0=1 at Transpose.perm: perm swaps dims 1 and 2``: the argument, where the lowering implements it (the
    place the literal reached; left out when it is ``shown_at``, where a table row already says the value sits), and
    the rule's evidence."""
    at = f" at {link.place}" if link.place and link.place != shown_at else ""
    return f"{link.parameter}={value_text(link.value)}{at}: {link.rule}"


def baked_text(function: str) -> str:
    """What a value of a trace_only body owes to torchlib: ``put there at export time by torchlib aten_view
    (trace_only Python)``."""
    return f"put there at export time by torchlib {function} (trace_only Python)"


def value_text(v: Any, width: int = MAX_VALUE_TEXT) -> str:
    """A value as one short line of text (strings quoted, floats by ``float_text``, long values cut with an
    ellipsis)."""
    text = tensor_summary_text(v, width) or _text(v)
    text = " ".join(text.split()) if "\n" in text else text
    return text if len(text) <= width else text[: width - 1] + "…"


def _text(v: Any) -> str:
    if isinstance(v, float):
        return float_text(v)
    if isinstance(v, dict) and len(v) == 1 and isinstance(v.get("node"), str):  # another FX node, as JSON holds it
        return f"%{v['node']}"  # (as a signature reads it: ``size=[%sym_size_int_18, 8]``, not ``{'node': …}``)
    if isinstance(v, list):
        return "[" + ", ".join(map(_text, v)) + "]"
    if isinstance(v, tuple):
        return "(" + ", ".join(map(_text, v)) + ("," if len(v) == 1 else "") + ")"
    return repr(v)
