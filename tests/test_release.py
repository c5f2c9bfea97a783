"""``inspector.core.util.release.drain`` frees what a container alone holds a slice at a time (never in one C call,
which would hold the GIL for the whole of it), and a diff lets go of its sides' units that way once it is made."""

from __future__ import annotations

import math
import weakref

from inspector.core.diff import diff_models
from inspector.core.diff.units import Side
from inspector.core.model.index import open_index
from inspector.core.util import release
from tests.conftest import ROOT


class Tracked:
    """Records, when freed, how many items its container still held: one value per freeing step."""

    def __init__(self, seen: list[int], container: object) -> None:
        self.seen, self.container = seen, container

    def __del__(self) -> None:
        self.seen.append(len(self.container))  # type: ignore[arg-type]


def test_a_list_is_freed_in_slices_from_its_end():
    seen: list[int] = []
    items: list[object] = []
    items.extend(Tracked(seen, items) for _ in range(10_000))
    alive = [weakref.ref(x) for x in items]
    release.drain(items)
    assert items == [] and all(r() is None for r in alive)
    steps = sorted(set(seen), reverse=True)
    assert len(steps) == math.ceil(10_000 / release.CHUNK) == 5
    assert steps == [10_000 - k * release.CHUNK for k in range(1, 5)] + [0]


def test_dicts_and_sets_are_emptied_in_steps():
    seen: list[int] = []
    table: dict[int, object] = {}
    table.update((k, Tracked(seen, table)) for k in range(5_000))
    release.drain(table)
    assert table == {} and len(seen) == 5_000
    assert seen == list(range(4_999, -1, -1))  # one by one
    names = {f"v{k}" for k in range(5_000)}
    release.drain(names)
    assert names == set()


def test_a_diff_releases_its_sides_and_keeps_its_result(monkeypatch):
    released: list[int] = []
    real = Side.release

    def spy(self: Side) -> None:
        released.append(len(self.units))
        real(self)
        assert self.units == []

    monkeypatch.setattr(Side, "release", spy)
    a = open_index(ROOT / "tests" / "zoo" / "pair_eps_a.onnx")
    b = open_index(ROOT / "tests" / "zoo" / "pair_eps_b.onnx")
    diff = diff_models(a, b)
    assert released == [11, 11]  # each side's 11 units, emptied
    assert diff.changes and diff == diff_models(a, b)  # the same result as a diff made afresh
