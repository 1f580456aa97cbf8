"""The real Codex CLI and Gemini CLI, configured offline and run in a loopback-only namespace.

:func:`run_codex` and :func:`run_gemini` write each CLI's own configuration into a fresh home
folder (``REAL-PARTS.md``'s recipes: no update checks, no analytics, the scripted API as the
model provider), then run it non-interactively in ``project`` through :mod:`._isolated` under
``unshare -n``. The hooks under test are whatever the project (or the home) holds.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests._realparts import require
from tests.claude_code_cli._messages_api import CLAUDE, OFFLINE_ENV

__all__ = [
    "CLAUDE",
    "CODEX",
    "GEMINI",
    "RECORDER_URL",
    "REPO",
    "SERVE_TOKEN",
    "SERVE_URL",
    "CliRun",
    "Steps",
    "WebView",
    "bridge_env",
    "codex_config",
    "gemini_settings",
    "need_cli",
    "run_claude",
    "run_codex",
    "run_gemini",
]

HERE = Path(__file__).parent
REPO = HERE.parent.parent
CODEX = HERE / "node_modules" / ".bin" / "codex"
GEMINI = HERE / "node_modules" / ".bin" / "gemini"
# how long one run of a real CLI may take: Gemini CLI took past 90 s to send its first request
# at a load of 35 on 2 cores (a second at rest); a test of a CLI gets CLI_TEST_S
CLI_RUN_S = 240
CLI_TEST_S = 600
# ``otelhooks serve`` beside a CLI (``serve_traces=``): alone in the namespace, its own port
SERVE_PORT = 4319
SERVE_URL = f"http://127.0.0.1:{SERVE_PORT}"
SERVE_TOKEN = "serve-token"
# a recording HTTP server beside a CLI (``recorder_port=``), for a hook of type ``http``
RECORDER_URL = "http://127.0.0.1:4320"

# A Codex hooks file whose guard denies any shell command containing `rm -r` (exit 2).
CODEX_RM_GUARD = """\
hooks:
  - id: no-rm
    type: PreToolUse
    matcher: "@shell"
    command: "case \\"$HOOK_TOOL_INPUT\\" in *'rm -r'*) exit 2;; esac"
"""


# each scripted turn: (call id, shell command), or the fields of a ShellStep (another tool)
Steps = Sequence[tuple[str, str] | dict[str, Any]]


@dataclass(frozen=True)
class CliRun:
    """One finished CLI run: its exit code, output and the scripted API's requests (and, with
    ``recorder_port``, every request the recording server received)."""

    returncode: int
    stdout: str
    stderr: str
    requests: list[dict[str, Any]]
    recorded: list[dict[str, Any]] = field(default_factory=list)

    def told(self) -> str:
        """What the model was told of its tool calls in the last request, in any of the three
        APIs: Claude's ``tool_result`` blocks, Codex's ``function_call_output`` items, Gemini's
        ``functionResponse`` parts (each as its text or JSON, joined by spaces)."""
        last = self.requests[-1]
        if "messages" in last:  # Anthropic Messages API (Claude Code)
            blocks = [b for b in last["messages"][-1]["content"] if b.get("type") == "tool_result"]
            return " ".join(str(b["content"]) for b in blocks)
        if "input" in last:  # OpenAI Responses API (Codex CLI)
            items = [i for i in last["input"] if i.get("type") == "function_call_output"]
            return " ".join(json.dumps(i.get("output")) for i in items)
        parts = [p for c in last["contents"] for p in c.get("parts") or ()]  # Gemini
        return " ".join(json.dumps(p["functionResponse"]) for p in parts if "functionResponse" in p)


def need_cli(path: Path) -> Path:
    """The CLI at ``path``, and a loopback-only namespace to run it in (else skip, or fail
    under CI)."""
    require(f"{path.name} (npm ci --prefix tests/coding_agents_cli)", path.exists())
    isolatable = shutil.which("unshare") is not None and shutil.which("ip") is not None
    if isolatable and os.geteuid() != 0:
        isolatable = _can_unshare()
    require("a loopback-only network namespace (unshare -n, as root)", isolatable)
    return path


def _can_unshare() -> bool:
    done = subprocess.run(["unshare", "-n", "true"], capture_output=True, timeout=10)
    return done.returncode == 0


def _base_env(home: Path) -> dict[str, str]:
    python_bin = str(Path(sys.executable).parent)
    return {
        "PATH": f"{python_bin}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(REPO),
        "HOME": str(home),
        "LANG": "C.UTF-8",
    }


def codex_config(home: Path, *, trusted: Path | None = None) -> Path:
    """``$CODEX_HOME/config.toml`` for the scripted provider; ``trusted`` marks a project
    trusted (Codex loads a project's ``.codex/hooks.json`` only then)."""
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    lines = [
        'model = "gpt-5.5"',
        'model_provider = "fake"',
        'approval_policy = "never"',
        'sandbox_mode = "danger-full-access"',
        "check_for_update_on_startup = false",
        "",
        "[model_providers.fake]",
        'name = "scripted"',
        'base_url = "{api}/v1"',
        'env_key = "FAKE_OPENAI_KEY"',
        'wire_api = "responses"',
        "request_max_retries = 0",
        "stream_max_retries = 0",
        "",
        "[analytics]",
        "enabled = false",
        "",
        "[features]",
        "plugins = false",
    ]
    if trusted is not None:
        lines += ["", f"[projects.{json.dumps(str(trusted))}]", 'trust_level = "trusted"']
    (codex_home / "config.toml").write_text("\n".join(lines) + "\n")
    (codex_home / "config.toml.template").unlink(missing_ok=True)
    return codex_home


def _isolated(
    api: str,
    argv: list[str],
    cwd: Path,
    env: dict[str, str],
    steps: Steps,
    work: Path,
    timeout_s: float,
    templates: Sequence[Path] = (),
    serve_traces: Path | None = None,
    settle_locks: Path | None = None,
    web_view: WebView | None = None,
    recorder: bool = False,
    approvals: bool = False,
) -> CliRun:
    spec: dict[str, Any] = {
        "api": api,
        "argv": argv,
        "cwd": str(cwd),
        "env": env,
        "steps": [s if isinstance(s, dict) else {"id": s[0], "command": s[1]} for s in steps],
        "timeout_s": timeout_s,
        "templates": [str(t) for t in templates],
        "recorder": int(RECORDER_URL.rsplit(":", 1)[1]) if recorder else None,
    }
    work.mkdir(parents=True, exist_ok=True)
    if serve_traces is not None:
        spec["serve"] = _serve_spec(serve_traces, work, web_view, approvals=approvals)
        spec["settle_locks"] = str(settle_locks) if settle_locks is not None else None
    spec_file, out_file = work / f"{api}-spec.json", work / f"{api}-out.json"
    spec_file.write_text(json.dumps(spec))
    out_file.unlink(missing_ok=True)
    runner = [sys.executable, "-m", "tests.coding_agents_cli._isolated"]
    subprocess.run(
        ["unshare", "-n", *runner, str(spec_file), str(out_file)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=True,
        timeout=timeout_s + 20,
    )
    out = json.loads(out_file.read_text())
    return CliRun(
        out["returncode"], out["stdout"], out["stderr"], out["requests"], out.get("recorded", [])
    )


@dataclass(frozen=True)
class WebView:
    """What serve's web view showed before serve stopped: ``path`` gets every trace it lists
    (``GET /v1/ui/traces/{id}``, a JSON list), read once one trace holds, for each group of
    ``wait_for``, a span with one of its attributes (or after 30 s)."""

    path: Path
    wait_for: Sequence[Sequence[str]]


def _serve_spec(
    traces: Path, work: Path, web_view: WebView | None = None, *, approvals: bool = False
) -> dict[str, Any]:
    """``otelhooks serve`` writing the spans it joins to ``traces`` (its web view on with
    ``web_view``, its approvals inbox on with ``approvals`` too)."""
    argv = [sys.executable, "-m", "otelhooks", "serve", "--port", str(SERVE_PORT)]
    env = {
        **_base_env(work),
        "OTELHOOKS_ADMIN_TOKEN": SERVE_TOKEN,
        "OTELHOOKS_INGEST_TOKEN": SERVE_TOKEN,
    }
    web = [] if web_view or approvals else ["--no-web"]
    spec: dict[str, Any] = {
        "argv": [*argv, *web, "--traces-out", str(traces)],
        "env": env,
        "port": SERVE_PORT,
        "log": str(work / "serve.log"),
    }
    if web_view is not None:
        spec["web"] = {
            "path": str(web_view.path),
            "wait_for": [list(group) for group in web_view.wait_for],
            "token": SERVE_TOKEN,
        }
    return spec


def run_codex(
    project: Path,
    home: Path,
    steps: Steps,
    *,
    extra_env: dict[str, str] | None = None,
    timeout_s: float = CLI_RUN_S,
    bypass_hook_trust: bool = True,
    serve_traces: Path | None = None,
    settle_locks: Path | None = None,
    web_view: WebView | None = None,
    recorder: bool = False,
    approvals: bool = False,
    options: Sequence[str] = (),
) -> CliRun:
    """``codex exec`` in ``project`` against the scripted Responses API (``codex_config``
    must have written ``home/.codex/config.toml``); with ``serve_traces``, serve stops only
    once the bridge daemons of ``settle_locks`` (their socket folder) have left, and with
    ``approvals`` it keeps an approvals inbox; with ``recorder``, a recording HTTP server
    listens at ``RECORDER_URL``; ``options`` go to ``codex exec`` before the prompt."""
    env = {
        **_base_env(home),
        "CODEX_HOME": str(home / ".codex"),
        "FAKE_OPENAI_KEY": "sk-fake",
        **(extra_env or {}),
    }
    argv = [
        str(CODEX),
        *("exec", "--json", "--skip-git-repo-check", "--ephemeral"),
        "--dangerously-bypass-approvals-and-sandbox",
        # Codex runs a hook only once its content is trusted (reviewed in its TUI): exec
        # cannot review, so the tests pass Codex's own non-interactive override
        *(["--dangerously-bypass-hook-trust"] if bypass_hook_trust else []),
        *options,
        "clean up",
    ]
    # the API's port is known only inside the namespace: config.toml gets it there
    templates = [home / ".codex" / "config.toml"]
    work = home / "run"
    return _isolated(
        "responses",
        argv,
        project,
        env,
        steps,
        work,
        timeout_s,
        templates,
        serve_traces,
        settle_locks,
        web_view,
        recorder,
        approvals,
    )


def gemini_settings(home: Path, more: dict[str, Any] | None = None) -> Path:
    """``~/.gemini/settings.json`` for the scripted API (no updates, telemetry, IDE or trust
    prompt; API-key auth, else headless mode exits 41)."""
    folder = home / ".gemini"
    folder.mkdir(parents=True, exist_ok=True)
    settings = {
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "ide": {"enabled": False},
        "security": {"folderTrust": {"enabled": False}, "auth": {"selectedType": "gemini-api-key"}},
        "model": {"name": "gemini-2.5-flash"},
    }
    path = folder / "settings.json"
    if not path.exists() or more:
        path.write_text(json.dumps({**settings, **(more or {})}, indent=2) + "\n")
    return path


def run_gemini(
    project: Path,
    home: Path,
    steps: Steps,
    *,
    extra_env: dict[str, str] | None = None,
    timeout_s: float = CLI_RUN_S,
    settings: dict[str, Any] | None = None,
    serve_traces: Path | None = None,
    web_view: WebView | None = None,
    approvals: bool = False,
    skip_trust: bool = False,
) -> CliRun:
    """``gemini -p ... --yolo`` in ``project`` against the scripted Gemini API (``settings``
    replace top-level keys of its user settings; ``serve_traces`` and ``approvals`` as for
    :func:`run_codex`). The folder is trusted through ``GEMINI_CLI_TRUST_WORKSPACE``, or with
    ``skip_trust`` through ``--skip-trust`` (what Gemini CLI suggests for headless runs)."""
    gemini_settings(home, settings)
    env = {
        **_base_env(home),
        "GOOGLE_GEMINI_BASE_URL": "{api}",
        "GEMINI_API_KEY": "fake",
        "GEMINI_TELEMETRY_ENABLED": "false",
        "GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(home / "no-system-settings.json"),
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
        # the CLI itself, not a second Node process that starts it again with a larger heap:
        # the hooks run the same, a second a run sooner
        "GEMINI_CLI_NO_RELAUNCH": "true",
        **(extra_env or {}),
    }
    argv = [str(GEMINI), "-p", "clean up", "--yolo", "--output-format", "json"]
    if skip_trust:
        env.pop("GEMINI_CLI_TRUST_WORKSPACE")
        argv.append("--skip-trust")
    work = home / "run"
    return _isolated(
        "gemini",
        argv,
        project,
        env,
        steps,
        work,
        timeout_s,
        serve_traces=serve_traces,
        web_view=web_view,
        approvals=approvals,
    )


def run_claude(
    project: Path,
    home: Path,
    steps: Steps,
    *,
    timeout_s: float = CLI_RUN_S,
    extra_env: dict[str, str] | None = None,
) -> CliRun:
    """``claude -p ...`` in ``project`` against the scripted Messages API of
    ``tests/claude_code_cli`` (``REAL-PARTS.md``'s recipe), in the same namespace; each step is
    ``{"id", "tool", "args"}`` (a ``tool_use`` block)."""
    home.mkdir(parents=True, exist_ok=True)
    env = {
        **_base_env(home),
        **OFFLINE_ENV,
        "ANTHROPIC_BASE_URL": "{api}",
        **(extra_env or {}),
    }
    argv = [str(CLAUDE), "-p", "clean up", "--permission-mode", "bypassPermissions"]
    argv += ["--output-format", "json"]
    return _isolated("messages", argv, project, env, steps, home / "run", timeout_s)


def bridge_env(tmp_path: Path) -> dict[str, str]:
    """The hook bridge's state under ``tmp_path``, its daemon leaving 3 s after the last event."""
    return {
        "OTELHOOKS_CLAUDE_STATE": str(tmp_path / "state.sqlite3"),
        "OTELHOOKS_CLAUDE_DAEMON_IDLE": "3",
    }


def skip_reason(run: CliRun) -> str:
    """A run's output, for an assertion message."""
    return f"exit {run.returncode}\nstdout: {run.stdout[-1500:]}\nstderr: {run.stderr[-1500:]}"
