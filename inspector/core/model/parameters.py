"""A model's parameter count and bytes, made where a summary or a report asks for them (``ModelIndex.parameters``).

Apart from ``index`` for start-up: a check of a model never asks, and each dataclass costs a process about 4 million
instructions to make (callgrind, ``benchmarks/bench_startup.py --instructions``). The counts come from the tensors'
metadata (untrusted): negative dims count as empty (``tensor_sizes.element_count``), so no sum is negative.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ParameterStats:
    """The initializers' element count and bytes, and the part stored as external data."""

    count: int  # elements
    bytes: int
    external_bytes: int  # the part stored as external data
