"""Callgrind instructions per unit of the same cases on two trees, side by side.

``python benchmarks/callgrind_trees.py CASES N`` with ``BEFORE=/path/to/old/checkout`` (default
``/work/wt/before``): each tree runs its own ``benchmarks/_callgrind.py`` (copy this round's
``_cases.py`` and ``_callgrind.py`` into the old tree first, so both run the same cases) at 0 and N
units under ``valgrind --separate-threads=yes``; prints ``{"tree:case": [all threads, agent's
thread]}`` per unit as JSON.
"""

import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

PY = sys.executable
HERE = os.path.dirname(os.path.abspath(__file__))
TREES = {"before": os.environ.get("BEFORE", "/work/wt/before"), "after": os.path.dirname(HERE)}
CASES = sys.argv[1].split(",")
N = int(sys.argv[2])


def run(tree, key, n):
    root = TREES[tree]
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "cg.out"
        p = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--separate-threads=yes",
                # As run.py: valgrind's default scheduling can starve the observer worker.
                "--fair-sched=yes",
                f"--callgrind-out-file={out}",
                PY,
                f"{root}/benchmarks/_callgrind.py",
                key,
                str(n),
            ],
            env={**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": root},
            capture_output=True,
            text=True,
            cwd=f"{root}/benchmarks",
            timeout=1800,
        )
        total = [int(x.rsplit(":", 1)[1]) for x in p.stderr.splitlines() if "Collected :" in x]
        if not total or p.returncode:  # _callgrind.py refuses a run whose queue dropped events
            raise RuntimeError(p.stderr[-3000:])
        main = 0
        for f in Path(d).glob("cg.out*-01"):
            for line in f.read_text().splitlines():
                if line.startswith(("totals:", "summary:")):
                    main = int(line.split()[1])
                    break
        return total[0], main


jobs = [(t, k, m) for t in TREES for k in CASES for m in (0, N)]
with ThreadPoolExecutor(2) as pool:
    res = dict(zip(jobs, pool.map(lambda j: run(*j), jobs), strict=True))
out = {}
for t in TREES:
    for k in CASES:
        a, b = res[(t, k, 0)], res[(t, k, N)]
        out[f"{t}:{k}"] = [(b[0] - a[0]) // N, (b[1] - a[1]) // N]
print(json.dumps(out))
