"""The registry's index (names, regex prefixes, shared plans, caches) answers exactly as scanning
every hook with its own matcher does, for every matcher kind and dialect, globally and per
operation, with the caches cold, warm and overflowing."""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest

from otelhooks import Hook, HookRegistry
from otelhooks._dispatch import _match_index

EVENTS = ("before_tool_call", "after_tool_call", "on_tool_call_error", "tool_result_persist")
DIALECTS = ("otelhooks", "lobehub", "workspace", "claude")

# Matchers of every kind: all, names and name lists, anchored and unanchored regexes (RE2 and,
# with a lookaround, Python's re), flags, invalid regexes (exact-name fallback), Claude's mcp__.
MATCHERS = (
    None,
    "*",
    "",
    "readFile",
    "fs/readFile",
    "Edit|Write",
    "Edit, Write",
    "tool_1|tool_2",
    "/^shell9\\/.*$/",
    "/^fs\\//",
    "^db9/",
    "^fs/read",
    "^fs/(read|write)File$",
    "^fs/read(?!x)",
    "^tool_(?=1)",
    "readFile",
    "File$",
    "^",
    "^$",
    "mcp__memory__.*",
    "mcp__.*__write",
    "(?i)^FS/",
    "^(?i:fs)/x",
    "^ab*c",
    "^fs|^db",
    "/tool_[0-9]+/",
    "[",
    "^(",
    "fs/.*",
    "^.*",
    "^\\x66s/",
    "^é/",
)

NAMES = (
    "readFile",
    "writeFile",
    "Edit",
    "Write",
    "tool_1",
    "tool_2",
    "tool_17",
    "shell9",
    "shell9/x",
    "db9/q",
    "db9",
    "ac",
    "abbbc",
    "FS",
    "mcp__memory__write",
    "mcp__other__read",
    "",
    "[",
    "é",
    "x",
)
IDENTIFIERS = ("fs", "FS", "db9", "shell9", "mcp__memory__", "é", "")


def _values(identifier: str, api_name: str) -> tuple[str, ...]:
    """A tool call's matcher values, as the instrumentation builds them."""
    return (f"{identifier}/{api_name}" if identifier else api_name, api_name)


def _noop(**_: Any) -> None:
    return None


def _random_hooks(rng: random.Random, count: int, prefix: str) -> list[Hook]:
    return [
        Hook(
            id=f"{prefix}{i}",
            type=rng.choice(EVENTS),
            handler=_noop,
            matcher=rng.choice(MATCHERS),
            dialect=rng.choice(DIALECTS),  # type: ignore[arg-type]
        )
        for i in range(count)
    ]


def _expected(hooks: list[tuple[int, Hook]], event: str, values: tuple[str, ...]) -> list[Hook]:
    """What scanning every hook finds: registration order, each ``Hook`` object once."""
    out: list[Hook] = []
    for _, hook in sorted(hooks, key=lambda e: e[0]):
        if hook.event == event and hook.compiled_matcher.matches(values) and hook not in out:
            out.append(hook)
    return out


def _expected_ids(
    hooks: list[tuple[int, Hook]], events: tuple[str, ...], values: tuple[str, ...]
) -> tuple[str, ...]:
    ids: list[str] = []
    for event in events:
        ids.extend(h.id for h in _expected(hooks, event, values) if h.id not in ids)
    return tuple(ids)


def _all_values() -> list[tuple[str, ...]]:
    return [_values(i, n) for i, n in itertools.product(IDENTIFIERS, NAMES)] + [("*",)]


def _check(
    reg: HookRegistry,
    order: list[tuple[int, Hook]],
    op_order: list[tuple[int, Hook]],
    values: tuple[str, ...],
) -> None:
    for event in (*EVENTS, "after_step"):
        expected = _expected(order, event, values)
        assert reg.match(event, values) == expected, (event, values)
        assert reg.any_match(event, values) == bool(expected), (event, values)
        merged = _expected(order + op_order, event, values)
        assert reg.match(event, values, operation_id="op") == merged, (event, values)
        assert reg.any_match(event, values, operation_id="op") == bool(merged), (event, values)
        # what a chain reads: the same hooks, cached with the plan (none here notifies)
        for op, hooks in ((None, expected), ("op", merged)):
            intercepts = reg.intercepts(event, values, operation_id=op)
            assert intercepts.hooks == hooks, (event, values, op)
            assert intercepts.matched == tuple(h.id for h in hooks), (event, values, op)
            assert [f.hook for f in intercepts.facts] == hooks, (event, values, op)
    # which events have hooks, and which: what match() gives for each
    assert reg.hooked(EVENTS, values) == {
        e: hooks for e in EVENTS if (hooks := _expected(order, e, values))
    }
    assert reg.hooked(EVENTS, values, operation_id="op") == {
        e: hooks for e in EVENTS if (hooks := _expected(order + op_order, e, values))
    }
    assert reg.matched_ids(EVENTS, values) == _expected_ids(order, EVENTS, values)
    assert reg.matched_ids(EVENTS, values, operation_id="op") == _expected_ids(
        order + op_order, EVENTS, values
    )


@pytest.mark.parametrize("seed", range(12))
def test_the_index_answers_as_every_hooks_own_matcher(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A tiny cache: the property holds through overflow and refills too.
    monkeypatch.setattr(_match_index, "_CACHE_LIMIT", 1 + seed % 5)
    rng = random.Random(seed)
    reg = HookRegistry()
    global_hooks = _random_hooks(rng, rng.randint(1, 25), "g")
    op_hooks = _random_hooks(rng, rng.randint(0, 8), "o")
    # Registered in several batches, operation hooks between global ones, and one Hook object
    # in both scopes: order is by registration, and it is listed once.
    order: list[tuple[int, Hook]] = []
    op_order: list[tuple[int, Hook]] = []
    half = len(global_hooks) // 2
    batches: list[tuple[list[Hook], str | None]] = [
        (global_hooks[:half], None),
        (op_hooks, "op"),
        (global_hooks[half:], None),
    ]
    if global_hooks[:half]:
        batches.append(([global_hooks[0]], "op"))
    for seq, (batch, operation_id) in enumerate(batches):
        reg.register(batch, operation_id=operation_id)
        target = op_order if operation_id else order
        target.extend((seq * 1000 + i, h) for i, h in enumerate(batch))
    values = _all_values()
    for _ in range(3):  # cold, then warm, then after the caches have overflowed
        rng.shuffle(values)
        for v in values:
            _check(reg, order, op_order, v)
            _check(reg, order, op_order, tuple(v))  # an equal tuple, not the same object
    # Removing a hook rebuilds the index; the answers follow.
    removed = global_hooks[-1]
    assert reg.remove(removed.id)
    order = [e for e in order if e[1].id != removed.id]
    for v in values:
        _check(reg, order, op_order, v)
    reg.unregister("op")
    for v in values:
        _check(reg, order, [], v)


def test_hooks_of_an_operation_alone_are_found_for_that_operation_only() -> None:
    """No global hook: the registry answers from the operation's hooks (or nothing at all)."""
    rng = random.Random(99)
    reg = HookRegistry()
    values = _all_values()
    for v in values:
        _check(reg, [], [], v)  # nothing registered
    assert not reg.has_own("op")
    op_hooks = _random_hooks(rng, 12, "o")
    reg.register(op_hooks, operation_id="op")
    assert reg.has_own("op")
    assert not reg.has_own("other")
    op_order = list(enumerate(op_hooks))
    for _ in range(2):  # cold, then warm
        for v in values:
            _check(reg, [], op_order, v)
    reg.unregister("op")
    assert not reg.has_own("op")
    for v in values:
        _check(reg, [], [], v)


def test_one_values_tuple_asked_about_every_event_in_turn() -> None:
    """The latest-lookup memo answers per event, not with the previous event's answer."""
    reg = HookRegistry()
    reg.register(
        [
            {"id": "a", "type": "before_tool_call", "handler": _noop, "matcher": "/^fs\\//"},
            {"id": "b", "type": "after_tool_call", "handler": _noop, "matcher": "writeFile"},
            {"id": "c", "type": "tool_result_persist", "handler": _noop, "matcher": "*"},
        ]
    )
    read, write, other = _values("fs", "readFile"), _values("db", "writeFile"), ("x", "y")
    for _ in range(2):
        assert [h.id for h in reg.match("before_tool_call", read)] == ["a"]
        assert reg.match("after_tool_call", read) == []
        assert reg.any_match("tool_result_persist", read)
        assert reg.matched_ids(EVENTS, read) == ("a", "c")
        assert not reg.any_match("before_tool_call", write)
        assert reg.any_match("after_tool_call", write)
        assert reg.matched_ids(EVENTS, write) == ("b", "c")
        assert reg.matched_ids(EVENTS, other) == ("c",)
        assert reg.matched_ids(("after_tool_call",), other) == ()


def test_a_cold_name_costs_no_cache_entry() -> None:
    """Values nothing but match-everything hooks could match share one plan, uncached, so a
    stream of new tool names never fills (or clears) the cache."""
    reg = HookRegistry()
    reg.register(
        [
            {"id": "n", "type": "before_tool_call", "handler": _noop, "matcher": "tool_1"},
            {"id": "r", "type": "afterToolCall", "handler": _noop, "matcher": "^db9/"},
            {"id": "s", "type": "tool_result_persist", "handler": _noop, "matcher": "*"},
        ]
    )
    index = reg._global
    for i in range(10_000):
        values = _values("fs", f"tool_{i:05d}")
        assert not reg.any_match("before_tool_call", values)
        assert reg.matched_ids(EVENTS, values) == ("s",)
    assert not index.plans
    assert reg.any_match("before_tool_call", ("fs/tool_1", "tool_1"))
    assert reg.any_match("after_tool_call", ("db9/x", "x"))
    assert len(index.plans) == 2


def test_an_unanchored_regex_is_still_scanned() -> None:
    reg = HookRegistry()
    reg.register([{"id": "r", "type": "beforeToolCall", "handler": _noop, "matcher": "File$"}])
    assert reg.any_match("before_tool_call", ("fs/readFile", "readFile"))
    assert not reg.any_match("before_tool_call", ("fs/read", "read"))


def test_threads_sharing_the_latest_lookup_memo_get_their_own_answers() -> None:
    """Reads take no lock: threads asking about different values at once (each pair of
    values, plan is replaced whole) never see another thread's answer."""
    import threading

    reg = HookRegistry()
    reg.register(
        [
            {"id": "r", "type": "before_tool_call", "handler": _noop, "matcher": "/^fs\\//"},
            {"id": "n", "type": "before_tool_call", "handler": _noop, "matcher": "tool_7"},
        ]
    )
    errors: list[tuple[str, ...]] = []

    def ask(identifier: str) -> None:
        for i in range(3000):
            values = _values(identifier, f"tool_{i % 50}")
            want = (("r",) if identifier == "fs" else ()) + (("n",) if i % 50 == 7 else ())
            if reg.matched_ids(EVENTS, values) != want:
                errors.append(values)

    threads = [threading.Thread(target=ask, args=(i,)) for i in ("fs", "db", "fs", "")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_the_hooked_answer_is_shared_and_read_only() -> None:
    reg = HookRegistry()
    reg.register([{"id": "w", "type": "after_tool_call", "matcher": "rm", "handler": print}])
    first = reg.hooked(EVENTS, ("rm",))
    assert reg.hooked(EVENTS, ("rm",)) is first  # cached with the values' plan
    assert [h.id for h in first["after_tool_call"]] == ["w"]
    with pytest.raises(TypeError):
        first["before_tool_call"] = []  # type: ignore[index]
