"""Real hook inputs for every tool kind each CLI has, captured from the real CLIs.

Each CLI runs (loopback-only namespace, scripted model API) one call per tool kind it can make
offline, with a hook that keeps what the CLI sends (:mod:`._capture`) on its pre- and post-tool
events. ``python -m tests.coding_agents_cli._kinds`` writes them to ``captured/kinds/`` as
``{cli}-{version}-{kind}-{event}.json`` (the temporary folder's path replaced by ``/tmp/ag``),
and the tests check the tool-kind table on those files and on a fresh capture.

What a CLI cannot make here is not in :data:`KIND_CALLS` (docs/adapters.md says why): Codex
has no file-read or web-fetch tool (it reads with its shell), and its web search is OpenAI's
hosted tool (the model API runs it, no hook fires).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from tests.coding_agents_cli._runs import (
    CLAUDE,
    CODEX,
    GEMINI,
    HERE,
    CliRun,
    codex_config,
    run_claude,
    run_codex,
    run_gemini,
)

__all__ = ["CLI_PATHS", "FIXTURES", "KIND_CALLS", "capture", "fixture_name", "version"]

FIXTURES = HERE / "captured" / "kinds"
CLI_PATHS = {"claude-code": CLAUDE, "codex": CODEX, "gemini": GEMINI}
_PACKAGES = {
    "claude-code": HERE.parent / "claude_code_cli" / "node_modules" / "@anthropic-ai/claude-code",
    "codex": HERE / "node_modules" / "@openai" / "codex",
    "gemini": HERE / "node_modules" / "@google" / "gemini-cli",
}
_NOTES = "notes.txt"
_ADD = "*** Begin Patch\n*** Add File: new.txt\n+hello\n*** End Patch\n"
_UPDATE = "*** Begin Patch\n*** Update File: notes.txt\n@@\n-alpha\n+ALPHA\n beta\n*** End Patch\n"
# a URL nothing answers: the tool is asked for (its hooks fire), the fetch fails
_URL = "http://127.0.0.1:9/page"

# cli -> kind -> the scripted call (a ShellStep's fields, or Claude's tool_use); "{p}" is the
# project folder
KIND_CALLS: dict[str, dict[str, dict[str, Any]]] = {
    "claude-code": {
        "shell": {"tool": "Bash", "args": {"command": "echo hi", "description": "say hi"}},
        "file_read": {"tool": "Read", "args": {"file_path": "{p}/notes.txt"}},
        "file_write": {"tool": "Write", "args": {"file_path": "{p}/new.txt", "content": "hi\n"}},
        "file_edit": {
            "tool": "Edit",
            "args": {"file_path": "{p}/notes.txt", "old_string": "alpha", "new_string": "ALPHA"},
        },
        "web_fetch": {"tool": "WebFetch", "args": {"url": _URL, "prompt": "summarise"}},
        "web_search": {"tool": "WebSearch", "args": {"query": "otelhooks"}},
    },
    "codex": {
        "shell": {"command": "echo hi"},
        "file_write": {"tool": "apply_patch", "text": _ADD},
        "file_edit": {"tool": "apply_patch", "text": _UPDATE},
    },
    "gemini": {
        "shell": {"command": "echo hi"},
        "file_read": {"tool": "read_file", "args": {"file_path": _NOTES}},
        "file_write": {"tool": "write_file", "args": {"file_path": "new.txt", "content": "hi\n"}},
        "file_edit": {
            "tool": "replace",
            "args": {
                "file_path": _NOTES,
                "old_string": "alpha",
                "new_string": "ALPHA",
                "instruction": "capitalise alpha",
            },
        },
        "web_fetch": {"tool": "web_fetch", "args": {"prompt": f"Summarise {_URL}"}},
        "web_search": {"tool": "google_web_search", "args": {"query": "otelhooks"}},
    },
}
PRE = {"claude-code": "PreToolUse", "codex": "PreToolUse", "gemini": "BeforeTool"}
POST = {
    "claude-code": ("PostToolUse", "PostToolUseFailure"),
    "codex": ("PostToolUse",),
    "gemini": ("AfterTool",),
}


def version(cli: str) -> str:
    """The installed version of ``cli`` (its npm package's)."""
    data = json.loads((_PACKAGES[cli] / "package.json").read_text())
    return str(data["version"])


def fixture_name(cli: str, kind: str, event: str) -> str:
    return f"{cli}-{version(cli)}-{kind}-{event}.json"


def _hook(cli: str, out: Path) -> dict[str, Any]:
    command = f"{sys.executable} -m tests.coding_agents_cli._capture {out}"
    handler: dict[str, Any] = {"type": "command", "command": command, "timeout": 30}
    if cli == "gemini":
        handler = {"name": "capture", **handler, "timeout": 30_000}
    return {"matcher": "*", "hooks": [handler]}


def _project(root: Path, cli: str, out: Path) -> Path:
    project = root / "p"
    project.mkdir(parents=True)
    (project / _NOTES).write_text("alpha\nbeta\n")
    folder = {"claude-code": ".claude", "codex": ".codex", "gemini": ".gemini"}[cli]
    file = {"claude-code": "settings.json", "codex": "hooks.json", "gemini": "settings.json"}[cli]
    hook = _hook(cli, out)
    events = [PRE[cli], *POST[cli]]
    (project / folder).mkdir()
    (project / folder / file).write_text(json.dumps({"hooks": {e: [hook] for e in events}}))
    return project


def _steps(cli: str, project: Path) -> list[dict[str, Any]]:
    steps = []
    for kind, call in KIND_CALLS[cli].items():
        text = json.dumps(call).replace("{p}", str(project))
        steps.append({"id": f"call_{kind}", **json.loads(text)})
    return steps


def capture(cli: str, root: Path) -> tuple[CliRun, dict[str, list[dict[str, Any]]]]:
    """Run ``cli`` once with every call of :data:`KIND_CALLS`: the run, and each kind's hook
    inputs (pre first), paths under ``root`` written ``/tmp/ag``."""
    out = root / "captured.jsonl"
    project = _project(root, cli, out)
    steps = _steps(cli, project)
    home = root / "home"
    if cli == "codex":
        codex_config(home, trusted=project)
        run = run_codex(project, home, steps)
    elif cli == "gemini":
        run = run_gemini(project, home, steps)
    else:
        run = run_claude(project, home, steps)
    events = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    by_kind: dict[str, list[dict[str, Any]]] = {kind: [] for kind in KIND_CALLS[cli]}
    for event, kind in zip(events, _kinds_in_order(cli, events), strict=True):
        if kind is not None:
            by_kind[kind].append(_normalized(event, root))
    return run, by_kind


def _kinds_in_order(cli: str, events: list[dict[str, Any]]) -> list[str | None]:
    """Each captured event's kind: the scripted calls run one after another, in order; the
    call id (Claude Code, Codex) or the arguments (Gemini) say which call an event is."""
    kinds: list[str | None] = []
    order = list(KIND_CALLS[cli])
    current = -1
    for event in events:
        use = str(event.get("tool_use_id") or "")
        if use.startswith("call_") and use[5:] in order:
            kinds.append(use[5:])
            continue
        if event.get("hook_event_name") == PRE[cli]:
            current += 1
        kinds.append(order[current] if 0 <= current < len(order) else None)
    return kinds


def _normalized(event: dict[str, Any], root: Path) -> dict[str, Any]:
    text = json.dumps(event).replace(str(root), "/tmp/ag")
    # Claude Code's transcript folder is the project's path with "-" for "/"
    text = text.replace(str(root).replace("/", "-"), "-tmp-ag")
    # a temporary folder's name, wherever a CLI wrote it (Codex's and Claude's transcripts)
    text = re.sub(r"/tmp/tmp[\w-]+", "/tmp/ag", text)
    data: dict[str, Any] = json.loads(text)
    return data


def main() -> int:
    import tempfile

    FIXTURES.mkdir(parents=True, exist_ok=True)
    for cli in KIND_CALLS:
        with tempfile.TemporaryDirectory(prefix=f"kinds-{cli}-") as tmp:
            run, by_kind = capture(cli, Path(tmp))
            for kind, events in by_kind.items():
                for event in events:
                    name = fixture_name(cli, kind, str(event["hook_event_name"]))
                    (FIXTURES / name).write_text(json.dumps(event, indent=1) + "\n")
            print(cli, run.returncode, {k: len(v) for k, v in by_kind.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
