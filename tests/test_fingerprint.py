"""The arguments fingerprint is FNV-1a 64 over canonical JSON, reproducible elsewhere."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from otelhooks import args_fingerprint
from otelhooks._fingerprint import ACCELERATED, canonical_json, fnv1a_64, fnv1a_64_python

IMPLEMENTATIONS = [pytest.param(fnv1a_64_python, id="python"), pytest.param(fnv1a_64, id="used")]


@pytest.mark.parametrize("fnv", IMPLEMENTATIONS)
def test_fnv1a_64_matches_the_published_test_vectors(fnv: object) -> None:
    assert callable(fnv)
    assert fnv(b"") == 0xCBF29CE484222325
    assert fnv(b"a") == 0xAF63DC4C8601EC8C
    assert fnv(b"foobar") == 0x85944171F73967E8
    # the tail loop and the four-bytes-a-turn loop of the Python definition, and a long input
    assert fnv(b"chongo was here!\n") == 0x46810940EFF5F915
    assert fnv(bytes(range(256)) * 40) == fnv1a_64_python(bytes(range(256)) * 40)


def test_the_compiled_accelerator_is_built_where_a_compiler_is() -> None:
    # CI machines have gcc and the Python headers: there a missing accelerator is a build bug.
    if not ACCELERATED and os.environ.get("CI") != "true":
        pytest.skip("otelhooks._fnv1a was not built (no C compiler); the definition is used")
    assert ACCELERATED
    assert fnv1a_64 is not fnv1a_64_python


@given(st.binary(max_size=300))
def test_the_accelerator_agrees_with_the_definition(data: bytes) -> None:
    assert fnv1a_64(data) == fnv1a_64_python(data)
    assert fnv1a_64(bytearray(data)) == fnv1a_64_python(data)  # any bytes-like object


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


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(_json)
def test_canonical_json_is_the_documented_encoding(value: object) -> None:
    import json

    expected = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert canonical_json(value) == expected


def test_canonical_json_turns_other_values_into_their_str() -> None:
    assert canonical_json({"p": Path("a/b"), "n": float("nan")}) == '{"n":NaN,"p":"a/b"}'
