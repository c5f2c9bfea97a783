"""The core's one hash, BLAKE2b, taken from CPython's built-in ``_blake2`` module, which is where ``hashlib`` takes
it from too (``hashlib.blake2b is _blake2.blake2b``): importing ``hashlib`` loads OpenSSL's library and its table of
algorithms, 2.5-2.9 ms of a ~100 ms command on a small export (``python -X importtime``) for a hash it does not
provide. Where ``_blake2`` is missing (another interpreter), ``hashlib``'s is used: the digests are the same."""

from __future__ import annotations

try:
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - CPython always has it
    from hashlib import blake2b

__all__ = ["blake2b"]
