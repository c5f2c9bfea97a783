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


def float_text(x: float) -> str:
    """A float as text: 8 significant digits at most, and for a value float32 holds (an ONNX attribute or constant's),
    the fewest digits that give it back: ``1e-05``, not the ``9.9999997e-06`` that 8 digits make of float32(1e-5),
    so a baked eps reads as the model's config wrote it (the value compared, and saved in reviews, is unchanged). A
    value float32 does not hold (an FX argument, a Python double) keeps its 8 digits: shortened as a float32 it would
    read another number (0.3535533905932738 is 0.35355339, its float32 0.35355338). A whole number keeps its
    point (``1.0``)."""
    text = f"{x:.8g}"
    if not math.isfinite(x):
        return text
    x32 = float32(x)
    if f"{x32:.8g}" == text:
        # (below a million without an exponent, as numpy writes a float32: softplus's threshold 20.0 read ``2e+01``)
        text = next((short for short in (f"{x32:.{digits}g}" for digits in range(1, 8))
                     if float32(float(short)) == x32 and ("e" not in short or abs(x32) >= 1e6 or "e" in text)), text)
    # a whole number keeps its point, as numpy writes a float: ``Constant<value = 1.0>`` is a float's, ``1`` an int's
    return text if any(c in text for c in ".en") else text + ".0"
