"""Float32 rounding without numpy: the one place a value is rounded as ONNX stores a float attribute or element.

Its own module, apart from ``plain_tensors`` (whose tensor class a command on a model without tensor constants never
makes: 3.8 million instructions of start-up, callgrind): literals and the catalogue's canonical values round every
float attribute they read.
"""

from __future__ import annotations

import math
import struct


def float32(x: float) -> float:
    """``x`` rounded to float32, as ``float(numpy.float32(x))`` rounds it (the C cast both make): out of its range,
    an infinity of its sign, where ``struct`` refuses it."""
    try:
        return float(struct.unpack("<f", struct.pack("<f", x))[0])
    except OverflowError:
        return math.copysign(math.inf, x)
