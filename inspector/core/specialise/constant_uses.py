"""Where a constant of a body lands: the class of one such place, made where a link follows a constant.

Apart from ``flow`` for start-up: a command whose model has no constant to follow (most small exports) does not make
it (about 4 million instructions a dataclass, callgrind, ``benchmarks/bench_startup.py --instructions``). The op
types held come from the model (untrusted) and are escaped where they are shown.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Use:
    """A place a constant reaches: operand ``slot`` of ``node`` (top-level index in the body), through ``via``."""

    node: int
    op_type: str
    slot: int
    via: tuple[str, ...]  # value-preserving ops passed on the way (Cast, CastLike, Identity, Sqrt, Reshape)
