"""Run one case ``N`` times, for ``valgrind --tool=callgrind`` to count instructions.

``python benchmarks/_callgrind.py CASE N [WARMUP]``: builds the case, runs ``WARMUP`` units (so
caches, lazy imports, the registry's match cache and the worker threads are warm), then ``N``
units, flushes every queue, and leaves with ``os._exit`` (no interpreter teardown, whose cost
would depend on N). ``run.py`` runs it for N and for 0 and divides the difference by N, so set-up,
warm-up and start-up cancel out.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main() -> None:
    key, n = sys.argv[1], int(sys.argv[2])
    warmup = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    from _cases import CASES

    cases = {c.key: c for c in CASES}
    if key not in cases:
        from _peers import PEER_CASES

        cases.update({c.key: c for c in PEER_CASES})
    bench = cases[key].make()
    bench.round_start()
    bench.run(warmup)
    bench.round_end()
    bench.round_start()
    bench.run(n)
    bench.round_end()
    sys.stdout.flush()
    dropped = bench.dropped()
    if dropped:
        # The observer worker fell behind and its queue overflowed: the events dropped were
        # never built, so the count would flatter the case (seen under valgrind's default,
        # unfair thread scheduling, which can starve the worker: run.py asks for a fair one).
        print(f"DROPPED {dropped} events: this run does not count", file=sys.stderr)
        sys.stderr.flush()
        os._exit(3)
    os._exit(0)


if __name__ == "__main__":
    main()
