"""Fold puts its nodes in place with one sort of the graph's repeated field whose keys are taken in turn
(``build.sort_entries``): the kept entries come out in key order, the rest are dropped, and when the keys are not taken
in list order the entries are sorted again by identity, so the graph is right either way."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import onnx

from inspector.core.fold.build import sort_entries


def _graph(n: int) -> onnx.GraphProto:
    graph = onnx.GraphProto()
    for k in range(n):
        graph.node.add(op_type="Relu", name=f"n{k}")
    return graph


def test_entries_come_out_in_key_order_and_the_rest_is_dropped() -> None:
    graph = _graph(6)
    held = list(graph.node)
    keys = [2, 6, 0, 6, 1, 3]  # n1 and n3 dropped (their key is past the last place)
    first = [held[2], held[4], held[0], held[5]]
    sort_entries(graph.node, held, keys, first)
    assert [n.name for n in graph.node] == ["n2", "n4", "n0", "n5"]
    assert all(a is b for a, b in zip(graph.node, first, strict=True))  # moved, not copied


class _Backwards(Sequence[int]):
    """Keys read by position as they are, but taken in turn from the last: as a sort computing keys in another
    order than CPython's would take them."""

    def __init__(self, keys: list[int]) -> None:
        self.keys = keys

    def __getitem__(self, k):  # type: ignore[no-untyped-def]
        return self.keys[k]

    def __len__(self) -> int:
        return len(self.keys)

    def __iter__(self) -> Iterator[int]:
        return reversed(self.keys)


def test_keys_taken_in_another_order_are_caught_before_anything_is_dropped() -> None:
    graph = _graph(6)
    held = list(graph.node)
    keys = [2, 6, 0, 6, 1, 3]
    first = [held[2], held[4], held[0], held[5]]
    sort_entries(graph.node, held, _Backwards(keys), first)
    assert [n.name for n in graph.node] == ["n2", "n4", "n0", "n5"]


def test_equal_keys_keep_the_field_order_in_the_fallback() -> None:
    graph = _graph(5)
    held = list(graph.node)
    keys = [1, 0, 1, 0, 0]
    first = [held[1], held[3], held[4], held[0], held[2]]
    sort_entries(graph.node, held, _Backwards(keys), first)
    assert [n.name for n in graph.node] == ["n1", "n3", "n4", "n0", "n2"]
