"""An overview of a model's module structure that fits a view at a readable scale, for graphs too big to fit.

The ``nn.Module`` tree is drawn as nested boxes: a *group* (a module shown with what is inside it) is a frame with
its name on top and its children flowed left to right, wrapping at the width given; a *tile* is a module shown as
one box. Runs of identical siblings (``layers.0`` … ``layers.469``: same class, same size, numbered in sequence)
are folded into one group that names the run and shows its first member's inside, so a 30k-node Llama is a dozen
boxes. Modules are opened largest first while the number of boxes stays within a budget.

One pass over the module tree for the sizes, then work proportional to the boxes drawn; no Graphviz, no Qt.
Coordinates are points, origin top-left, as in ``inspector.render.layout``.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from inspector.core.model.module_tree import ModuleNode
from inspector.core.util.units import plural
from inspector.render.layout import CHAR_WIDTH, LABEL_FONT_SIZE, LINE_HEIGHT, node_size
from inspector.render.scene import MODULE, SceneNode

MAX_BOXES = 48  # groups and tiles together: what a view shows readably
GAP = 8.0  # between boxes
PAD = 6.0  # inside a group's frame
TITLE = LABEL_FONT_SIZE * LINE_HEIGHT + 6.0  # a group's name line

_NUMBERED = re.compile(r"^(.*?)(\d+)$")

BoxKind = Literal["group", "tile"]


@dataclass(slots=True)
class Box:
    """A group or a tile: ``node`` is what a box of the graph view shows (a module box, id ``mod:<path>``)."""

    kind: BoxKind
    node: SceneNode
    module: ModuleNode
    run: int = 1  # how many identical siblings it stands for
    children: list[Box] = field(default_factory=list)
    x: float = 0.0  # top-left corner
    y: float = 0.0
    width: float = 0.0
    height: float = 0.0


@dataclass(frozen=True, slots=True)
class Overview:
    boxes: list[Box]  # every box, groups before what they hold
    width: float
    height: float


def module_overview(root: ModuleNode, width: float, height: float | None = None,
                    max_boxes: int = MAX_BOXES) -> Overview:
    """The overview of the module tree under ``root``, flowed to ``width`` points and, when ``height`` is given,
    no taller than that if it can be (fewer modules are opened until it fits)."""
    totals = module_totals(root)
    budget = max_boxes
    while True:
        overview = _overview(root, width, budget, totals)
        if height is None or overview.height <= height or budget <= len(root.children):
            return overview
        budget = max(budget * 2 // 3, len(root.children))


def _overview(root: ModuleNode, width: float, max_boxes: int, totals: dict[int, int]) -> Overview:
    top = [_box(root, c, totals) for c in _runs(list(root.children.values()), totals)]
    count = len(top)
    # open the largest modules first, while the boxes stay within the budget
    heap = [(-totals[id(b.module)], k, b) for k, b in enumerate(top)]
    heapq.heapify(heap)
    serial = len(heap)
    while heap:
        _neg, _k, box = heapq.heappop(heap)
        kids = _runs(list(box.module.children.values()), totals)
        if not kids or count + len(kids) > max_boxes:
            continue
        box.kind = "group"
        box.children = [_box(box.module, c, totals) for c in kids]
        count += len(kids)
        for child in box.children:
            serial += 1
            heapq.heappush(heap, (-totals[id(child.module)], serial, child))
    w, h = _flow(top, width, 0.0, 0.0)
    boxes: list[Box] = []
    stack = list(reversed(top))
    while stack:
        b = stack.pop()
        boxes.append(b)
        stack.extend(reversed(b.children))
    return Overview(boxes, w, h)


def title(box: Box) -> str:
    """A group's name line: its label and what it is."""
    return f"{box.node.label} · {box.node.detail}"


def module_totals(root: ModuleNode) -> dict[int, int]:
    """Nodes under each module (itself and its descendants), by ``id``: one pass."""
    return _sums(root, lambda m: m.node_count)


def module_call_totals(root: ModuleNode) -> dict[int, int]:
    """Aten calls under each module (its own and its descendants'), by ``id``: one pass."""
    return _sums(root, lambda m: len(m.calls))


def _sums(root: ModuleNode, own: Callable[[ModuleNode], int]) -> dict[int, int]:
    """``own`` of each module added up over its subtree, by ``id``: children before parents, without recursion."""
    order: list[ModuleNode] = []
    stack = [root]
    while stack:
        m = stack.pop()
        order.append(m)
        stack.extend(m.children.values())
    totals: dict[int, int] = {}
    for m in reversed(order):  # children before parents
        totals[id(m)] = own(m) + sum(totals[id(c)] for c in m.children.values())
    return totals


def _runs(children: list[ModuleNode], totals: dict[int, int]) -> list[tuple[ModuleNode, int]]:
    """Children with runs of identical numbered siblings folded: (first member, run length)."""
    out: list[tuple[ModuleNode, int]] = []
    k = 0
    while k < len(children):
        first = children[k]
        m = _NUMBERED.match(first.path)
        n = 1
        if m is not None:
            prefix, start = m.group(1), int(m.group(2))
            while k + n < len(children):
                other = children[k + n]
                if (other.path != f"{prefix}{start + n}" or other.class_name != first.class_name
                        or totals[id(other)] != totals[id(first)]
                        or len(other.children) != len(first.children)):
                    break
                n += 1
        out.append((first, n))
        k += n
    return out


def _box(parent: ModuleNode, member: tuple[ModuleNode, int], totals: dict[int, int]) -> Box:
    module, run = member
    name = module.name_under(parent)
    cls = module.class_name.rsplit(".", 1)[-1]
    total = totals[id(module)]
    nodes = plural(total, 'node')
    if run > 1:
        m = _NUMBERED.match(name)
        last = int(m.group(2)) + run - 1 if m else run - 1
        label = f"{name} … {last}"
        detail = f"{run} × {cls}, {nodes} each" if cls else f"{run} ×, {nodes} each"
    else:
        label = name
        detail = f"{cls}, {nodes}" if cls else nodes
    node = SceneNode("mod:" + module.path, label, MODULE, module.path, detail, True)
    w, h = node_size(node)
    return Box("tile", node, module, run, width=w, height=h)


def _flow(boxes: list[Box], width: float, x0: float, y0: float) -> tuple[float, float]:
    """Place ``boxes`` in rows from (x0, y0), wrapping at ``width``; returns the size used."""
    x, y, row_h, used_w = x0, y0, 0.0, 0.0
    for b in boxes:
        if b.kind == "group":
            inner_w, inner_h = _flow(b.children, max(width - 2 * PAD, 40.0), 0.0, 0.0)
            title_w = len(title(b)) * LABEL_FONT_SIZE * CHAR_WIDTH + 2 * PAD
            b.width = max(inner_w + 2 * PAD, title_w)
            b.height = inner_h + TITLE + PAD
        if x > x0 and x + b.width > x0 + width:
            x, y, row_h = x0, y + row_h + GAP, 0.0
        _place(b, x, y)
        x += b.width + GAP
        row_h = max(row_h, b.height)
        used_w = max(used_w, x - GAP - x0)
    return used_w, (y + row_h - y0) if boxes else 0.0


def _place(box: Box, x: float, y: float) -> None:
    """Put ``box`` at (x, y); a group's children, flowed from the origin, move inside its frame."""
    if box.kind == "group":
        for c in box.children:
            _shift(c, x + PAD, y + TITLE)
    box.x, box.y = x, y


def _shift(box: Box, dx: float, dy: float) -> None:
    stack = [box]
    while stack:
        b = stack.pop()
        b.x += dx
        b.y += dy
        stack.extend(b.children)
