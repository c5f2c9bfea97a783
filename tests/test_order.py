"""``core.util.order``: the one stable topological sort (fold's new node order, a module fold's units, diff's inlined
calls), on a real export's main graph: a valid order is kept as it is, a shuffled one is put back in a valid order
with ties broken by position (or by the keys given), and nodes on a cycle are left out and still waiting."""

from __future__ import annotations

import random

import onnx

from inspector.core.util.order import dependencies, kahn
from tests.conftest import ZOO


def _graph() -> tuple[list[list[str]], list[list[str]]]:
    g = onnx.load(str(ZOO / "llama_gqa.onnx"), load_external_data=False).graph
    return [list(n.input) for n in g.node], [list(n.output) for n in g.node]


def _valid(order: list[int], reads: list[list[str]], makes: list[list[str]]) -> bool:
    made_by = {o: i for i, outs in enumerate(makes) for o in outs if o}
    seen: set[int] = set()
    for i in order:
        if any(r in made_by and made_by[r] != i and made_by[r] not in seen for r in reads[i]):
            return False
        seen.add(i)
    return len(seen) == len(order)


def test_a_valid_order_is_kept() -> None:
    reads, makes = _graph()
    got = kahn(dependencies(reads, makes))
    assert got.order == list(range(len(reads))) and not any(got.waiting)


def test_a_shuffled_graph_is_put_back_in_a_valid_order() -> None:
    reads, makes = _graph()
    perm = list(range(len(reads)))
    random.Random(7).shuffle(perm)
    r, m = [reads[i] for i in perm], [makes[i] for i in perm]
    got = kahn(dependencies(r, m))
    assert sorted(got.order) == list(range(len(r))) and _valid(got.order, r, m)
    assert got.order != list(range(len(r)))  # (the shuffle broke the order: it was repaired, not kept)
    # keys as the original positions: exactly the export's order comes back
    keyed = kahn(dependencies(r, m), [float(p) for p in perm])
    assert [perm[i] for i in keyed.order] == list(range(len(reads)))


def test_nodes_on_a_cycle_are_left_waiting() -> None:
    reads, makes = _graph()
    first_reader = next(i for i, rs in enumerate(reads) if any(r in makes[0] for r in rs))
    reads = [list(rs) for rs in reads]
    reads[0].append(makes[first_reader][0])  # node 0 now reads what its reader makes: a cycle
    got = kahn(dependencies(reads, makes))
    assert 0 not in got.order and first_reader not in got.order
    assert got.waiting[0] > 0 and got.waiting[first_reader] > 0
    assert len(got.order) < len(reads) and _valid(got.order, reads, makes)
