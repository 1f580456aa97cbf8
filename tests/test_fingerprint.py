"""The arguments fingerprint is FNV-1a 64 over canonical JSON, reproducible elsewhere."""

from __future__ import annotations

from otelhooks import args_fingerprint
from otelhooks._fingerprint import canonical_json, fnv1a_64


def test_fnv1a_64_matches_the_published_test_vectors() -> None:
    assert fnv1a_64(b"") == 0xCBF29CE484222325
    assert fnv1a_64(b"a") == 0xAF63DC4C8601EC8C
    assert fnv1a_64(b"foobar") == 0x85944171F73967E8


def test_canonical_json_sorts_keys_and_keeps_unicode() -> None:
    assert canonical_json({"b": 1, "a": "é"}) == '{"a":"é","b":1}'


def test_fingerprint_ignores_key_order_and_is_16_hex_digits() -> None:
    one = args_fingerprint({"path": "a.txt", "mode": "r"})
    two = args_fingerprint({"mode": "r", "path": "a.txt"})
    assert one == two
    assert len(one) == 16
    assert int(one, 16) == fnv1a_64(b'{"mode":"r","path":"a.txt"}')


def test_fingerprint_differs_for_different_arguments() -> None:
    assert args_fingerprint({"a": 1}) != args_fingerprint({"a": 2})
