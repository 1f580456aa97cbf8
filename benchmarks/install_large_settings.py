"""Time and peak memory of ``install`` then ``uninstall`` on a large settings file.

    PYTHONPATH=. python benchmarks/install_large_settings.py [MEGABYTES [CLI]]

Writes a settings file of about MEGABYTES (13 by default: a long ``permissions.allow`` list, as
a settings file that grew over years) into a temporary folder, for Claude Code, Codex CLI and
Gemini CLI (or the one CLI named: ``claude-code``, ``codex``, ``gemini``; the peak RSS is the
process's, so one CLI a run measures that CLI alone), and prints each install's and
uninstall's wall time and the process's peak RSS.
"""

from __future__ import annotations

import json
import resource
import sys
import tempfile
import time
from pathlib import Path

from otelhooks.integrations.claude_code import install, uninstall
from otelhooks.integrations.coding_agents import install_agent, uninstall_agent


def _settings(megabytes: float) -> str:
    rule = "Bash(git log --oneline --since=2020-01-01 -- src/module_{:06d}/**)"
    count = int(megabytes * 1_000_000 / 64)
    allow = [rule.format(i) for i in range(count)]
    return json.dumps({"permissions": {"allow": allow}, "hooks": {"Stop": []}}, indent=2) + "\n"


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    megabytes = float(sys.argv[1]) if len(sys.argv) > 1 else 13.0
    text = _settings(megabytes)
    print(f"settings file: {len(text) / 1e6:.1f} MB")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        hooks = root / "hooks.yaml"
        hooks.write_text("hooks: []\n")
        names = sys.argv[2:] or ["claude-code", "codex", "gemini"]
        for name in names:
            project = root / name
            if name == "claude-code":
                path = project / ".claude" / "settings.json"
            else:
                path = project / f".{name}" / ("hooks.json" if name == "codex" else "settings.json")
            path.parent.mkdir(parents=True)
            path.write_text(text)
            started = time.perf_counter()
            if name == "claude-code":
                install(path, hooks_file=str(hooks))
            else:
                install_agent(name, project=project, hooks_file=hooks)
            installed = time.perf_counter() - started
            started = time.perf_counter()
            if name == "claude-code":
                uninstall(path)
            else:
                uninstall_agent(name, project=project)
            removed = time.perf_counter() - started
            same = path.read_text() == text
            print(
                f"{name}: install {installed:.1f} s, uninstall {removed:.1f} s, "
                f"peak RSS {_peak_mb():.0f} MB, round trip {'identical' if same else 'CHANGED'}"
            )


if __name__ == "__main__":
    main()
