"""Worst-case matcher cost: what the most hostile pattern and input the loader accepts cost.

Run from the repository root::

    python benchmarks/matcher_bench.py            # the numbers in benchmarks/README.md
    python benchmarks/matcher_bench.py --quick    # fewer rounds

Cases (microseconds per ``Matcher.matches`` call, the median of ``--rounds`` rounds):

* **re2**: user regexes on RE2 (``otelhooks[re2]``): ``(a+)+$`` and ``(a|aa)+$``, the classic
  exponential patterns, on ``"a" * n + "!"`` for n = 27 (9 s per call on a backtracking engine),
  1,024 and 65,536: the cost grows linearly with the input, never with the pattern's nesting.
* **re fallback**: the worst patterns :func:`otelhooks._matchers.backtracking_risk` lets Python's
  ``re`` run (at most two quantifiers, none nested; what RE2 cannot run, or every regex without
  the package), on a value at and over :data:`MAX_FALLBACK_INPUT` characters (cut to it).
* **backtracking re, for reference**: ``(a+)+$`` on Python's ``re`` (the engine before this
  change) for growing n, stopped once one call passes ``--budget`` seconds: time doubles per
  character.
* **dispatch**: ``HookRegistry.match`` for a tool event with a ``(a+)+$`` hook registered, the
  whole matching step of one dispatch.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import otelhooks._matchers as matchers
from otelhooks import Hook, HookRegistry, compile_matcher

HOSTILE = ("(a+)+$", "(a|aa)+$")
FALLBACK_WORST = (".*.*x", r"(?=.*\d)(a+)b", r"\w*\w*$")


def per_call_us(fn: Callable[[], Any], *, rounds: int, min_time_s: float = 0.02) -> float:
    """Median over rounds of the mean per call (each round runs at least ``min_time_s``)."""
    samples = []
    for _ in range(rounds):
        calls, started = 0, time.perf_counter()
        while True:
            fn()
            calls += 1
            elapsed = time.perf_counter() - started
            if elapsed >= min_time_s:
                break
        samples.append(elapsed / calls * 1e6)
    return statistics.median(samples)


def re2_cases(rounds: int) -> list[dict[str, Any]]:
    out = []
    for pattern in HOSTILE:
        matcher = compile_matcher(pattern, "lobehub")
        assert matcher.engine == "re2", "install otelhooks[re2] to run these cases"
        for n in (27, 1024, 65_536):
            value = ("a" * n + "!",)
            us = per_call_us(lambda m=matcher, v=value: m.matches(v), rounds=rounds)
            out.append({"engine": "re2", "pattern": pattern, "n": n, "us": round(us, 2)})
    return out


def fallback_cases(rounds: int) -> list[dict[str, Any]]:
    out = []
    saved = matchers._re2
    matchers._re2 = None  # as in an installation without google-re2
    try:
        for pattern in FALLBACK_WORST:
            assert matchers.backtracking_risk(pattern) is None, pattern
            matcher = compile_matcher(pattern, "lobehub")
            assert matcher.engine == "re"
            for n in (64, matchers.MAX_FALLBACK_INPUT, 65_536):
                value = ("a" * n,)
                us = per_call_us(lambda m=matcher, v=value: m.matches(v), rounds=rounds)
                out.append({"engine": "re", "pattern": pattern, "n": n, "us": round(us, 2)})
    finally:
        matchers._re2 = saved
    return out


def plain_reference(rounds: int) -> list[dict[str, Any]]:
    """A plain pattern on Python's re, the cost every regex matcher had before: the yardstick
    for the others (the machine's load moves all rows alike)."""
    pattern = re.compile("^readFile$")
    value = "a" * 27 + "!"
    us = per_call_us(lambda: pattern.search(value), rounds=rounds)
    return [{"engine": "re (old)", "pattern": "^readFile$", "n": 28, "us": round(us, 2)}]


def backtracking_reference(budget_s: float) -> list[dict[str, Any]]:
    out = []
    pattern = re.compile("(a+)+$")
    for n in range(14, 40):
        started = time.perf_counter()
        pattern.search("a" * n + "!")
        seconds = time.perf_counter() - started
        out.append({"engine": "re (old)", "pattern": "(a+)+$", "n": n, "us": round(seconds * 1e6)})
        if seconds > budget_s:
            break
    return out


def dispatch_case(rounds: int) -> dict[str, Any]:
    registry = HookRegistry()
    registry.register(
        [Hook(id="evil", type="beforeToolCall", matcher="(a+)+$", handler=lambda e: None)]
    )
    counter = iter(range(10**9))

    def one() -> None:  # a new tool name each call: the registry caches match results
        name = f"{'a' * 27}!{next(counter)}"
        registry.match("before_tool_call", (name, f"shell/{name}"))

    us = per_call_us(one, rounds=rounds)
    return {"case": "HookRegistry.match, (a+)+$ hook, new 29+-char name each", "us": round(us, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--budget", type=float, default=0.5, help="seconds, reference stop")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()
    rounds = 3 if args.quick else args.rounds
    results = {
        "python": sys.version.split()[0],
        "machine": platform.machine(),
        "re2": re2_cases(rounds) if matchers.RE2_AVAILABLE else "not installed",
        "fallback": fallback_cases(rounds),
        "reference": plain_reference(rounds) + backtracking_reference(args.budget),
        "dispatch": dispatch_case(rounds),
    }
    print(f"{'engine':<10} {'pattern':<16} {'n':>7} {'us/call':>12}")
    rows = [*(results["re2"] if isinstance(results["re2"], list) else [])]
    rows += results["fallback"] + results["reference"]
    for row in rows:
        print(f"{row['engine']:<10} {row['pattern']:<16} {row['n']:>7} {row['us']:>12,}")
    print(f"{results['dispatch']['case']}: {results['dispatch']['us']} us")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=2)


if __name__ == "__main__":
    main()
