"""Float arguments of recognised calls: read back from a float32 literal, they must lower to that literal again.

Truth is torch's: each recognised call's arguments against the ``fx_node`` metadata of the unstripped zoo export
(torch 2.13 exports, tests/zoo/README.md). An argument cut to 7 digits lowered to another float32 (a scale of
1/sqrt(8), the 0.35355338 the model holds, read back as 0.3535534; ``finfo(float32).min`` as -3.402823e+38).
"""

from __future__ import annotations

import math
import struct
from pathlib import Path

import pytest

from inspector.core.model.index import open_index
from inspector.core.model.keys import MAIN
from inspector.core.model.recognise_args import invert
from inspector.core.model.signature import call_signature
from inspector.core.util.floats import float32
from tests.stripping import stripped_file, zoo_dynamo

FLOAT32_MAX = struct.unpack("<f", b"\xff\xff\x7f\x7f")[0]  # 3.4028234663852886e+38, the largest finite float32


def _nodes(call) -> frozenset[int]:
    return frozenset(int(p[0]) for p in call.node_paths)


def test_float_arguments_given_back_are_the_float32_torch_passed(tmp_path: Path) -> None:
    """Every float argument a recognised call gets back is, as float32, the one torch bound, except where the
    literal is the square root of it (SDPA's scale: two float32 scales share one float32 root, and the shortest of
    them is given back): those lower to the literal again."""
    exact, by_root, other = 0, 0, []
    for path in zoo_dynamo():
        truth = {_nodes(c): c for c in open_index(path).provenance.calls if c.scope == MAIN}
        index = open_index(stripped_file(path, tmp_path))
        for call in (c for c in index.provenance.calls if c.recognised and c.fx is not None):
            want = truth.get(_nodes(call))
            if want is None or len(call.candidates) != 1 or want.target != call.target:
                continue
            bound = {b.parameter.name: b.value for b in call_signature(want).bound if b.provided}
            for name, got in call.fx.kwargs.items():
                passed = bound.get(name)
                if not isinstance(passed, float) or isinstance(got, bool) or not isinstance(got, (int, float)):
                    continue
                if float32(got) == float32(passed):
                    exact += 1
                elif call.target == "aten::scaled_dot_product_attention" and name == "scale" \
                        and float32(math.sqrt(got)) == float32(math.sqrt(passed)):
                    by_root += 1
                else:
                    other.append(f"{path.stem} {call.target} {name}: {got!r} (torch {passed!r})")
    print(f"\nfloat arguments: {exact} exact in float32, {by_root} SDPA scales of the same root")
    # (7 of them came back another float32 when cut to 7 digits: -3.402823e+38 for finfo.min three times, the logs
    # of 8 and 4 as 2.079442 and 1.386294, t5's 1/sqrt(32) as 0.1767767)
    assert other == []
    assert (exact, by_root) == (101, 2)


@pytest.mark.parametrize(("relation", "literal", "given"), [
    ("equal", -FLOAT32_MAX, -3.4028235e38),  # (7 digits: -3.402823e+38, float32 -3.4028230607e+38)
    ("scalar", float32(8 ** -0.5), 0.35355338),  # (7 digits: 0.3535534, another float32)
    ("scalar", float32(1e-5), 1e-05),  # (as written, not 9.99999974738e-06)
    ("equal", float32(0.1), 0.1),
    ("sqrt", float32(math.sqrt(8 ** -0.5)), 0.3535534),  # (the shortest scale whose root is the literal)
    ("reciprocal", float32(1 / 3), 3.0),
    ("neg", float32(-2.5), 2.5),
])
def test_a_float_comes_back_in_the_fewest_digits_that_lower_to_its_literal(relation: str, literal: float,
                                                                          given: float) -> None:
    got = invert(relation, literal, 1)
    assert got == (given,)
    forward = {"sqrt": math.sqrt, "reciprocal": lambda a: 1 / a, "neg": lambda a: -a}.get(relation, lambda a: a)
    assert float32(forward(got[0])) == literal
