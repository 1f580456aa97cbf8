"""The arguments fingerprint: 64-bit FNV-1a over a canonical JSON encoding.

Canonical encoding, so another implementation can reproduce it: JSON with object keys sorted,
separators ``,`` and ``:`` (no spaces), non-ASCII characters kept as UTF-8 (not ``\\u`` escapes),
values that are not JSON turned into their ``str()``. Arguments that encoding cannot take (nesting
past Python's recursion limit, ints over 4,300 digits, lone surrogates) are encoded by the one
event encoding of :mod:`otelhooks._encoding` (keys sorted the same way), so a hostile argument
never makes a tool call fail here; then FNV-1a 64 (offset basis
``0xcbf29ce484222325``, prime ``0x100000001b3``) over the UTF-8 bytes, written as 16 lowercase
hex digits.

:func:`fnv1a_64` is the compiled ``otelhooks._fnv1a`` where the install could build it (FNV-1a
is byte-serial, and pure Python pays a big-integer multiply per byte), else
:func:`fnv1a_64_python`, the definition; the tests hold the two to the same results.
"""

from __future__ import annotations

import json
from typing import Any, Final

__all__ = [
    "ACCELERATED",
    "args_fingerprint",
    "canonical_json",
    "fnv1a_64",
    "fnv1a_64_python",
]

_OFFSET: Final = 0xCBF29CE484222325
_PRIME: Final = 0x100000001B3
_MASK: Final = 0xFFFFFFFFFFFFFFFF


# One encoder for every call: ``json.dumps`` with these options builds a new encoder each time.
# ``encode`` keeps no state between calls (its circular-reference markers are per call), so
# sharing it is thread-safe.
_ENCODER: Final = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
)


def canonical_json(value: Any) -> str:
    """The canonical JSON text of ``value`` (see the module docstring); always valid UTF-8."""
    try:
        text = _ENCODER.encode(value)
    except (RecursionError, ValueError, TypeError):
        # a cycle, a key JSON has no spelling for (a tuple): the call must still open its span
        # and reach its guards, or it would run unjudged
        return _safe_canonical(value)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return _safe_canonical(value)
    return text


def _safe_canonical(value: Any) -> str:
    from otelhooks._encoding import jsonable  # only for hostile input

    return json.dumps(
        jsonable(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=True
    )


def fnv1a_64_python(data: bytes) -> int:
    """FNV-1a 64 of ``data`` in pure Python: the definition."""
    # Four bytes per loop turn, masked once per turn: ``(x mod 2**64) ^ b`` equals
    # ``(x ^ b) mod 2**64`` for a byte ``b``, and products agree modulo 2**64, so masking late
    # gives the same hash with a quarter of the loop overhead (the tail goes byte by byte).
    h, p, mask = _OFFSET, _PRIME, _MASK
    it = iter(data)
    for b0, b1, b2, b3 in zip(it, it, it, it, strict=False):
        h = ((((((((h ^ b0) * p) ^ b1) * p) ^ b2) * p) ^ b3) * p) & mask
    for byte in data[len(data) & ~3 :]:
        h = ((h ^ byte) * p) & mask
    return h


try:
    from otelhooks._fnv1a import fnv1a_64

    ACCELERATED = True
except ImportError:  # built without a C compiler
    fnv1a_64 = fnv1a_64_python
    ACCELERATED = False


def args_fingerprint(args: Any) -> str:
    """The fingerprint of tool arguments, e.g. ``args_fingerprint({"a": 1})``."""
    return format(fnv1a_64(canonical_json(args).encode("utf-8")), "016x")
