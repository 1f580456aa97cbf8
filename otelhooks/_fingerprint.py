"""The arguments fingerprint: 64-bit FNV-1a over a canonical JSON encoding.

Canonical encoding, so another implementation can reproduce it: JSON with object keys sorted,
separators ``,`` and ``:`` (no spaces), non-ASCII characters kept as UTF-8 (not ``\\u`` escapes),
values that are not JSON turned into their ``str()``; then FNV-1a 64 (offset basis
``0xcbf29ce484222325``, prime ``0x100000001b3``) over the UTF-8 bytes, written as 16 lowercase
hex digits.
"""

from __future__ import annotations

import json
from typing import Any, Final

__all__ = ["args_fingerprint", "canonical_json", "fnv1a_64"]

_OFFSET: Final = 0xCBF29CE484222325
_PRIME: Final = 0x100000001B3
_MASK: Final = 0xFFFFFFFFFFFFFFFF


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def fnv1a_64(data: bytes) -> int:
    h = _OFFSET
    for byte in data:
        h = ((h ^ byte) * _PRIME) & _MASK
    return h


def args_fingerprint(args: Any) -> str:
    """The fingerprint of tool arguments, e.g. ``args_fingerprint({"a": 1})``."""
    return format(fnv1a_64(canonical_json(args).encode("utf-8")), "016x")
