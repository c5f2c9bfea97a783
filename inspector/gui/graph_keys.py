"""Moving through the drawn boxes by keyboard, and tracing a box's inputs and outputs along the edges: plain
functions over the boxes (``NodeItem``) and edges (``EdgeItem``) of one drawing, so the view only asks them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from PySide6.QtCore import QPointF, Qt

from inspector.gui.graph_items import EdgeItem, NodeItem

ARROWS = {Qt.Key.Key_Left: (-1, 0), Qt.Key.Key_Right: (1, 0), Qt.Key.Key_Up: (0, -1), Qt.Key.Key_Down: (0, 1)}


def distance(a: QPointF, b: QPointF) -> float:
    return float(((a.x() - b.x()) ** 2 + (a.y() - b.y()) ** 2) ** 0.5)


def reading_order(items: Iterable[NodeItem]) -> list[NodeItem]:
    """The boxes top to bottom, then left to right (as Tab visits them)."""
    return sorted(items, key=lambda i: (round(i.rect().center().y()), i.rect().center().x()))


def reach(start: str, edges: Iterable[EdgeItem], boxes: Mapping[str, NodeItem], upstream: bool) -> set[str]:
    """The boxes ``start`` reads from (``upstream``) or feeds, along the edges."""
    step: dict[str, list[str]] = {}
    for e in edges:
        a, b = (e.target, e.source) if upstream else (e.source, e.target)
        step.setdefault(a, []).append(b)
    seen: set[str] = set()
    stack = list(step.get(start, ()))
    while stack:
        n = stack.pop()
        if n in seen or n == start or n not in boxes:
            continue
        seen.add(n)
        stack.extend(step.get(n, ()))
    return seen


def next_box(here: NodeItem, dx: int, dy: int, edges: Iterable[EdgeItem], boxes: Mapping[str, NodeItem]
             ) -> str | None:
    """Arrow keys from the box ``here``: Down and Up follow the edges (to the successor or predecessor nearest in
    x; the nearest box below or above when there is none), Left and Right go to the nearest box on that side, rows
    first."""
    centre, current = here.rect().center(), here.node.id
    if dy:
        linked = {e.target if dy > 0 else e.source for e in edges
                  if (e.source if dy > 0 else e.target) == current} - {current}
        near = [boxes[i] for i in linked if i in boxes]
        if near:
            best = min(near, key=lambda i: (abs(i.rect().center().x() - centre.x()), i.rect().center().y() * dy))
            return best.node.id
    candidates = []
    for item in boxes.values():
        c = item.rect().center()
        along = (c.x() - centre.x()) * dx + (c.y() - centre.y()) * dy  # distance in the direction asked
        across = abs((c.x() - centre.x()) * dy) + abs((c.y() - centre.y()) * dx)
        if along > 1.0:
            candidates.append((along + 4 * across, item.node.id))
    return min(candidates)[1] if candidates else None
