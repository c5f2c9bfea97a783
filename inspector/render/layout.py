"""Scene → geometry with Graphviz ``dot`` (through pygraphviz), a layout cache, and a standalone SVG writer.

Graphviz never sees a model string: nodes are passed as generated ids (``v0``, ``v1`` …) with a fixed size and
no label, and an edge label as a run of ``X`` as long as the (elided) label, in a monospace font, so that dot
reserves room for it and places it (``lp``) where it overlaps no other label or box; nothing in a model can
break the DOT it is given. Sizes come from a monospace estimate of the
label and detail lines (see ``node_size``), so whoever draws a node can fit its text with ``elide``.

Coordinates are in points, origin top-left, y growing down (Qt's convention); node positions are centres.
pygraphviz is imported inside ``layout_scene`` only, and calls into Graphviz are serialised with a lock
(Graphviz keeps global state and is not safe to run in two threads at once).
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from inspector.core.util.textsafe import xml_attr, xml_text
from inspector.core.util.units import plural
from inspector.render.dot import CLUSTER_FONT_SIZE, DotJob, DotResult, run_dot
from inspector.render.scene import (
    ATEN_CALL,
    CONSTANT,
    FUNCTION_CALL,
    INPUT,
    MODULE,
    OP,
    OUTPUT,
    Scene,
    SceneNode,
)

POINTS_PER_INCH = 72.0
LABEL_FONT_SIZE = 10.0  # points, monospace
DETAIL_FONT_SIZE = 8.0
CHAR_WIDTH = 0.6  # of the font size: a monospace glyph's advance
PADDING = 8.0  # left and right of the text
LINE_HEIGHT = 1.3  # of the font size
MIN_WIDTH = 48.0
MAX_WIDTH = 320.0  # longer text is elided
MARGIN = 16.0  # around the drawing in to_svg
EDGE_FONT_SIZE = 7.0  # points, monospace: edge labels (value types and shapes)
EDGE_LABEL_WIDTH = 160.0  # longer edge labels are elided (the whole label is in the tooltip)

# (fill, stroke) per node kind; the GUI may use the same palette.
KIND_COLOURS: dict[str, tuple[str, str]] = {
    OP: ("#eef3fb", "#5b7bb2"),
    FUNCTION_CALL: ("#fff4e0", "#c98a1b"),
    ATEN_CALL: ("#e9f6ec", "#3f8f56"),
    MODULE: ("#f3ecf9", "#7d5aa6"),
    INPUT: ("#e0f0ff", "#2a6fb0"),
    OUTPUT: ("#ffe9e0", "#b0512a"),
    CONSTANT: ("#f4f4f4", "#888888"),
}
_DEFAULT_COLOURS = ("#ffffff", "#444444")

# Op boxes are coloured by what the op does (the one definition, for the app and the SVG); others stay OP's.
OP_CATEGORY_COLOURS: dict[str, tuple[str, str]] = {
    "linear": ("#dbe8fb", "#2f5f9e"),  # matrix products and convolutions
    "shape": ("#f1f1ea", "#8a8a60"),  # moves or views data without computing
    "normalise": ("#f9e6f0", "#a64d79"),  # normalisations, softmax, reductions
    "activation": ("#fdf0d8", "#b7791f"),
    "control": ("#e6e0f8", "#5b4a9e"),  # control flow with subgraphs
}
_OP_CATEGORIES: dict[str, str] = {
    **dict.fromkeys(("MatMul", "Gemm", "Conv", "ConvTranspose", "Einsum", "MatMulInteger", "QLinearMatMul"),
                    "linear"),
    **dict.fromkeys(("Reshape", "Transpose", "Squeeze", "Unsqueeze", "Concat", "Split", "Slice", "Gather",
                     "GatherElements", "GatherND", "Expand", "Flatten", "Shape", "Size", "Cast", "CastLike",
                     "Identity", "Tile", "Pad", "ScatterND", "ScatterElements", "Range", "ConstantOfShape",
                     "Constant", "Where", "Trilu"), "shape"),
    **dict.fromkeys(("LayerNormalization", "BatchNormalization", "InstanceNormalization", "GroupNormalization",
                     "RMSNormalization", "SimplifiedLayerNormalization", "Softmax", "LogSoftmax", "ReduceMean",
                     "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2"), "normalise"),
    **dict.fromkeys(("Relu", "Gelu", "Sigmoid", "Tanh", "Erf", "Elu", "LeakyRelu", "HardSigmoid", "Softplus",
                     "Mish", "HardSwish", "Selu", "Celu", "PRelu"), "activation"),
    **dict.fromkeys(("If", "Loop", "Scan"), "control"),
}


def op_category(op_type: str) -> str | None:
    """The colour category of an ONNX op type (None: plain arithmetic and everything else)."""
    return _OP_CATEGORIES.get(op_type)


def box_colours(node: SceneNode) -> tuple[str, str]:
    """(fill, stroke) of a box: by kind, and for op boxes by the op's category."""
    if node.kind == OP:
        category = op_category(node.label)
        if category is not None:
            return OP_CATEGORY_COLOURS[category]
    return KIND_COLOURS.get(node.kind, _DEFAULT_COLOURS)
_RANKDIRS = frozenset({"TB", "LR", "BT", "RL"})
DotRunner = Callable[[DotJob, float], DotResult]  # how a layout job is run (render.dot.run_dot, or elsewhere)


@dataclass(frozen=True, slots=True)
class LaidNode:
    id: str
    x: float  # centre, points, from the left
    y: float  # centre, points, from the top (y grows down)
    width: float
    height: float


@dataclass(frozen=True, slots=True)
class LaidEdge:
    source: str
    target: str
    # A chain of cubic Bézier segments (3k+1 points, y down) from the tail to the head. Where dot draws an
    # arrowhead ('e,' / 's,' in "pos"), the chain ends (starts) with a straight segment to its tip, so the last
    # point is where the arrow points.
    points: tuple[tuple[float, float], ...]
    label_at: tuple[float, float] | None = None  # centre of the edge's label, as dot placed it


@dataclass(frozen=True, slots=True)
class LaidGroup:
    """The outline of an expanded module or aten call (a scene group), its label inside along its top."""

    id: str
    left: float
    top: float
    width: float
    height: float


@dataclass(frozen=True, slots=True)
class Layout:
    nodes: dict[str, LaidNode]
    edges: list[LaidEdge]
    width: float
    height: float
    groups: tuple[LaidGroup, ...] = ()  # parents before their children


def node_size(node: SceneNode) -> tuple[float, float]:
    """``(width, height)`` in points that fit the label (and detail line) in a monospace font."""
    small = small_lines(node)
    text_width = max([len(node.label) * LABEL_FONT_SIZE, *(len(t) * DETAIL_FONT_SIZE for t in small)]) * CHAR_WIDTH
    width = min(max(text_width + 2 * PADDING, MIN_WIDTH), MAX_WIDTH)
    height = LABEL_FONT_SIZE * LINE_HEIGHT + 2 * 5.0 + len(small) * DETAIL_FONT_SIZE * LINE_HEIGHT
    return round(width, 1), round(height, 1)


def small_lines(node: SceneNode) -> list[str]:
    """The lines under a box's label, in the small font: its attributes (ops), then its detail."""
    return [t for t in (node.attrs, node.detail) if t]


def elide(text: str, width: float, font_size: float = LABEL_FONT_SIZE) -> str:
    """``text`` cut with an ellipsis to fit ``width`` points of monospace at ``font_size`` (one line)."""
    line = text.splitlines()[0] if text else ""
    fits = max(int((width - 2 * PADDING) / (font_size * CHAR_WIDTH)), 1)
    if len(line) <= fits and line == text:
        return line
    return line[: max(fits - 1, 0)] + "…"


def edge_label_text(label: str) -> str:
    """An edge label as drawn (and as dot reserved room for): one line, elided to ``EDGE_LABEL_WIDTH``."""
    return elide(label, EDGE_LABEL_WIDTH, EDGE_FONT_SIZE) if label else ""


def layout_scene(scene: Scene, rankdir: str = "TB", dot: DotRunner | None = None) -> Layout:
    """Lay out ``scene`` with ``dot``; node ids passed to Graphviz are generated, never model text. ``dot`` runs
    the job (``inspector.render.dot.run_dot`` in this process unless told otherwise: the app runs it in another)."""
    if rankdir not in _RANKDIRS:
        raise ValueError(f"rankdir must be one of {sorted(_RANKDIRS)}, not {rankdir!r}")
    if not scene.nodes:
        return Layout({}, [], 0.0, 0.0)
    gv_id: dict[str, str] = {}
    sizes: dict[str, tuple[float, float]] = {}
    job_nodes: list[tuple[str, str, str]] = []
    for k, node in enumerate(scene.nodes):
        if node.id in gv_id:
            continue
        name = f"v{k}"
        gv_id[node.id] = name
        w, h = sizes[node.id] = node_size(node)
        job_nodes.append((name, f"{w / POINTS_PER_INCH:.4f}", f"{h / POINTS_PER_INCH:.4f}"))
    job_edges: list[tuple[str, str, str, str]] = []
    edge_index: list[int] = []
    for k, edge in enumerate(scene.edges):
        src, dst = gv_id.get(edge.source), gv_id.get(edge.target)
        if src is None or dst is None:
            continue
        text = edge_label_text(edge.label)
        job_edges.append((src, dst, f"e{k}", "X" * (len(text) + 2) if text else ""))  # room (and a gap), never text
        edge_index.append(k)
    ranksep = "0.3" if rankdir in ("TB", "BT") else "0.5"  # labels get their own room from dot
    clusters = _clusters(scene, gv_id)
    job = DotJob(rankdir, ranksep, tuple(job_nodes), tuple(job_edges), clusters)
    result = (dot or run_dot)(job, EDGE_FONT_SIZE)
    llx, lly, urx, ury = _floats(result.bb, 4)
    node_pos = {sid: result.node_pos.get(name, "") for sid, name in gv_id.items()}
    edge_pos = [(k, pos, lp) for k, (pos, lp) in zip(edge_index, result.edge_pos, strict=True)]

    def flip(x: float, y: float) -> tuple[float, float]:
        return (round(x - llx, 2), round(ury - y, 2))

    nodes: dict[str, LaidNode] = {}
    for sid, pos in node_pos.items():
        x, y = flip(*_floats(pos.rstrip("!"), 2))
        w, h = sizes[sid]
        nodes[sid] = LaidNode(sid, x, y, w, h)
    edges: list[LaidEdge] = []
    for k, pos, lp in edge_pos:
        edge = scene.edges[k]
        points = _edge_points(pos, flip)
        if not points:  # no spline (should not happen with dot): a straight segment between the centres
            a, b = nodes[edge.source], nodes[edge.target]
            points = _line((a.x, a.y), (b.x, b.y))
        label_at = flip(*_floats(lp, 2)) if lp else None
        edges.append(LaidEdge(edge.source, edge.target, points, label_at))
    groups = []
    for (name, _parent, _members, _room), group in zip(clusters, scene.groups, strict=False):
        x0, y0, x1, y1 = _floats(result.cluster_bb.get(name, ""), 4)
        if x1 > x0 and y1 > y0:
            (left, top), (right, bottom) = flip(x0, y1), flip(x1, y0)
            groups.append(LaidGroup(group.id, left, top, round(right - left, 2), round(bottom - top, 2)))
    return Layout(nodes, edges, round(urx - llx, 2), round(ury - lly, 2), tuple(groups))


def _clusters(scene: Scene, gv_id: dict[str, str]) -> tuple[tuple[str, str, tuple[str, ...], str], ...]:
    """The scene's groups as dot clusters: generated names (``g0`` …), their boxes (those of the groups inside
    too), and room for their label (``X`` repeated, never model text), one per group, parents first."""
    names = {g.id: f"g{k}" for k, g in enumerate(scene.groups)}
    parents = {g.id: g.parent for g in scene.groups}
    members: dict[str, list[str]] = {g.id: [] for g in scene.groups}
    for node_id, innermost in scene.group_of.items():
        group: str | None = innermost
        while group in members and node_id in gv_id:  # in its group and every group around it, as dot wants
            members[group].append(gv_id[node_id])
            group = parents[group]
    return tuple((names[g.id], names.get(g.parent or "", ""), tuple(members[g.id]), "X" * len(group_label(g.label)))
                 for g in scene.groups)


def group_label(label: str) -> str:
    """A group's label as drawn (and as dot reserved room for): one line, elided to twice ``MAX_WIDTH`` (an aten
    target and its FX name, ``aten::scaled_dot_product_attention  scaled_dot_product_attention``, is 65 chars)."""
    return elide(label, 2 * MAX_WIDTH, CLUSTER_FONT_SIZE)


def _floats(text: str, count: int) -> tuple[float, ...]:
    parts = text.split(",")
    try:
        values = tuple(float(p) for p in parts[:count])
    except ValueError:
        values = ()
    if len(values) != count or not all(math.isfinite(v) for v in values):
        return (0.0,) * count
    return values


def _line(a: tuple[float, float], b: tuple[float, float]) -> tuple[tuple[float, float], ...]:
    """``a`` to ``b`` as one straight cubic segment."""
    return (a, _lerp(a, b, 1 / 3), _lerp(a, b, 2 / 3), b)


def _lerp(a: tuple[float, float], b: tuple[float, float], t: float) -> tuple[float, float]:
    return (round(a[0] + (b[0] - a[0]) * t, 2), round(a[1] + (b[1] - a[1]) * t, 2))


def _edge_points(pos: str, flip: Callable[[float, float], tuple[float, float]]) -> tuple[tuple[float, float], ...]:
    """Dot's edge ``pos`` (``[e,x,y] [s,x,y] x,y x,y …``, possibly several splines split by ';')."""
    spline = pos.split(";")[0]
    start = end = None
    points: list[tuple[float, float]] = []
    for item in spline.split():
        if item.startswith("e,"):
            end = flip(*_floats(item[2:], 2))
        elif item.startswith("s,"):
            start = flip(*_floats(item[2:], 2))
        else:
            points.append(flip(*_floats(item, 2)))
    if len(points) < 4 or (len(points) - 1) % 3:
        if not points:
            return ()
        points = list(_line(points[0], points[-1]))
    if start is not None:
        points = [*_line(start, points[0])[:3], *points]
    if end is not None:
        points = [*points, *_line(points[-1], end)[1:]]
    return tuple(points)


class LayoutCache:
    """Thread-safe LRU of layouts; a key being computed by one thread is waited for, not computed twice."""

    def __init__(self, maxsize: int = 32, dot: DotRunner | None = None) -> None:
        """``dot``: how layouts are run (``layout_scene``'s ``dot``)."""
        self.maxsize = maxsize
        self.dot = dot
        self._items: OrderedDict[Hashable, Layout] = OrderedDict()
        self._pending: dict[Hashable, threading.Event] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def get(self, key: Hashable, rankdir: str = "TB") -> Layout | None:
        with self._lock:
            item = self._items.get((key, rankdir))
            if item is not None:
                self._items.move_to_end((key, rankdir))
            return item

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def get_or_compute(self, key: Hashable, scene: Scene, rankdir: str = "TB") -> Layout:
        full = (key, rankdir)
        while True:
            with self._lock:
                item = self._items.get(full)
                if item is not None:
                    self._items.move_to_end(full)
                    return item
                waiting = self._pending.get(full)
                if waiting is None:
                    done = self._pending[full] = threading.Event()
                    break
            waiting.wait()
        try:
            layout = layout_scene(scene, rankdir, self.dot)
            with self._lock:
                self._items[full] = layout
                self._items.move_to_end(full)
                while len(self._items) > self.maxsize:
                    self._items.popitem(last=False)
            return layout
        finally:
            with self._lock:
                self._pending.pop(full, None)
            done.set()


# --------------------------------------------------------------------------------------------
# SVG
# --------------------------------------------------------------------------------------------

def _n(v: float) -> str:
    return f"{v:.2f}".rstrip("0").rstrip(".")


def to_svg(scene: Scene, layout: Layout, highlights: dict[str, str] | None = None) -> str:
    """A standalone SVG of a laid-out scene (no external references); every model string is XML-escaped.
    ``highlights`` maps node ids to a border colour (``#rrggbb``), drawn thick as in the app."""
    marks = {k: v for k, v in (highlights or {}).items() if _is_colour(v)}
    width = layout.width + 2 * MARGIN
    height = layout.height + 2 * MARGIN
    note = ""
    if scene.truncated:
        note = f"{plural(scene.hidden_nodes, 'more node')} not shown"
        height += 18
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_n(width)}" height="{_n(height)}" '
        f'viewBox="0 0 {_n(width)} {_n(height)}" font-family="monospace">',
        f"<title>{xml_text(scene.title)}</title>",
        f'<rect x="0" y="0" width="{_n(width)}" height="{_n(height)}" fill="#ffffff"/>',
        f'<g transform="translate({_n(MARGIN)},{_n(MARGIN)})">',
    ]
    edge_labels: list[str] = []  # drawn last, over the boxes
    right = _svg_edges(out, edge_labels, scene, layout, width)  # edge labels may reach past the layout's right edge
    out.append('<g class="nodes">')
    by_id = {n.id: n for n in scene.nodes}
    for node_id, laid in layout.nodes.items():
        node = by_id.get(node_id)
        if node is not None:
            _svg_node(out, node, laid, marks.get(node_id))
    out.append("</g>")
    if edge_labels:
        out.append('<g class="edge-labels" font-size="7">')
        out.extend(edge_labels)
        out.append("</g>")
    out.append("</g>")
    if note:
        out.append(f'<text x="{_n(MARGIN)}" y="{_n(height - 8)}" font-size="9" fill="#aa3333">'
                   f"{xml_text(note)}</text>")
    out.append("</svg>")
    if right > width:  # widen the canvas to show every edge label
        wide = _n(math.ceil(right + 4))
        out[1] = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{wide}" height="{_n(height)}" '
                  f'viewBox="0 0 {wide} {_n(height)}" font-family="monospace">')
        out[3] = f'<rect x="0" y="0" width="{wide}" height="{_n(height)}" fill="#ffffff"/>'
    return "\n".join(out) + "\n"


def _svg_edges(out: list[str], edge_labels: list[str], scene: Scene, layout: Layout, width: float) -> float:
    """The edges' paths and arrowheads into ``out``, their labels into ``edge_labels``; the right end of the
    rightmost label (at least ``width``)."""
    right = width
    labels = {(e.source, e.target): e for e in scene.edges}
    out.append('<g class="edges" fill="none" stroke="#666666" stroke-width="1">')
    for edge in layout.edges:
        pts = edge.points
        if len(pts) < 2:
            continue
        d = f"M{_n(pts[0][0])},{_n(pts[0][1])}"
        for k in range(1, len(pts) - 2, 3):
            (x1, y1), (x2, y2), (x3, y3) = pts[k], pts[k + 1], pts[k + 2]
            d += f" C{_n(x1)},{_n(y1)} {_n(x2)},{_n(y2)} {_n(x3)},{_n(y3)}"
        out.append(f'<path d="{d}"/>')
        out.append(_arrowhead(pts))
        scene_edge = labels.get((edge.source, edge.target))
        if scene_edge is not None and scene_edge.label:
            mx, my = edge.label_at or edge_label_point(pts)
            text = edge_label_text(scene_edge.label)
            text_width = len(text) * EDGE_FONT_SIZE * CHAR_WIDTH
            right = max(right, MARGIN + mx + text_width / 2 + 2)
            edge_labels.append(f'<rect x="{_n(mx - text_width / 2 - 1)}" y="{_n(my - 4)}" '
                               f'width="{_n(text_width + 2)}" height="8" fill="#ffffff" fill-opacity="0.85"/>')
            edge_labels.append(f'<text x="{_n(mx)}" y="{_n(my + 2.5)}" text-anchor="middle" fill="#555555">'
                               f"{xml_text(text)}</text>")
    out.append("</g>")
    return right


def _svg_node(out: list[str], node: SceneNode, laid: LaidNode, mark: str | None) -> None:
    """One box: its shape, tooltip, label and small lines; ``mark`` a border colour."""
    fill, stroke = box_colours(node)
    rx = {INPUT: 10, OUTPUT: 10, MODULE: 8, ATEN_CALL: 5, FUNCTION_CALL: 5}.get(node.kind, 2)
    x0, y0 = laid.x - laid.width / 2, laid.y - laid.height / 2
    tip = "\n".join([node.label, *small_lines(node)])
    dashed = ' stroke-dasharray="4,2"' if node.expandable else ""
    out.append(f"<g class={xml_attr(node.kind)}>")
    out.append(f"<title>{xml_text(tip[:1000])}</title>")
    border = f'stroke="{mark}" stroke-width="3"' if mark else f'stroke="{stroke}"'
    out.append(f'<rect x="{_n(x0)}" y="{_n(y0)}" width="{_n(laid.width)}" height="{_n(laid.height)}" '
               f'rx="{rx}" fill="{fill}" {border}{dashed}/>')
    small = small_lines(node)
    label_y = laid.y - len(small) * DETAIL_FONT_SIZE * LINE_HEIGHT / 2 + LABEL_FONT_SIZE * 0.35
    out.append(f'<text x="{_n(laid.x)}" y="{_n(label_y)}" font-size="{_n(LABEL_FONT_SIZE)}" '
               f'text-anchor="middle" fill="#111111">{xml_text(elide(node.label, laid.width))}</text>')
    for k, line in enumerate(small):
        y = label_y + (k + 1) * DETAIL_FONT_SIZE * LINE_HEIGHT + 1
        colour = "#1f4e8c" if line is node.attrs else "#555555"
        out.append(f'<text x="{_n(laid.x)}" y="{_n(y)}" font-size="{_n(DETAIL_FONT_SIZE)}" '
                   f'text-anchor="middle" fill="{colour}">'
                   f"{xml_text(elide(line, laid.width, DETAIL_FONT_SIZE))}</text>")
    out.append("</g>")


def _is_colour(value: str) -> bool:
    return len(value) == 7 and value[0] == "#" and all(c in "0123456789abcdefABCDEF" for c in value[1:])


def edge_label_point(points: tuple[tuple[float, float], ...]) -> tuple[float, float]:
    """Where an edge's label goes when dot did not place it: the middle of its middle Bézier segment."""
    if len(points) < 4:
        return points[len(points) // 2] if points else (0.0, 0.0)
    seg = ((len(points) - 1) // 3 - 1) // 2
    (x0, y0), (x1, y1), (x2, y2), (x3, y3) = points[3 * seg: 3 * seg + 4]
    return ((x0 + 3 * x1 + 3 * x2 + x3) / 8, (y0 + 3 * y1 + 3 * y2 + y3) / 8)


def _arrowhead(pts: tuple[tuple[float, float], ...], size: float = 6.0) -> str:
    """A filled triangle at the last point, pointing along the last non-degenerate direction."""
    tip = pts[-1]
    for base in reversed(pts[:-1]):
        dx, dy = tip[0] - base[0], tip[1] - base[1]
        length = math.hypot(dx, dy)
        if length > 1e-6:
            break
    else:
        return ""
    ux, uy = dx / length, dy / length
    bx, by = tip[0] - ux * size, tip[1] - uy * size
    left = (bx - uy * size * 0.45, by + ux * size * 0.45)
    right = (bx + uy * size * 0.45, by - ux * size * 0.45)
    return (f'<polygon points="{_n(tip[0])},{_n(tip[1])} {_n(left[0])},{_n(left[1])} '
            f'{_n(right[0])},{_n(right[1])}" fill="#666666" stroke="none"/>')
