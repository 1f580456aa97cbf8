"""The Claude Code bridge's ``gen_ai.provider.name`` is the model provider, ``anthropic``
(a well-known value of the GenAI conventions), not the agent's name: checked on the spans the
real ``otelhooks claude-code`` process writes for a turn.

The source: github.com/open-telemetry/semantic-conventions-genai, the well-known values of
``gen_ai.provider.name`` (``anthropic``), read 2026-11-30."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from otelhooks import read_otlp_json_lines

SPEC = json.loads((Path(__file__).parent / "genai_requirements.json").read_text())


def hook(tmp: Path, event: str, **fields: Any) -> None:
    payload = {
        "session_id": "sess-p",
        "transcript_path": str(tmp / "sess-p.jsonl"),
        "cwd": str(tmp),
        "permission_mode": "default",
        "hook_event_name": event,
        **fields,
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    files = {"--hooks": "hooks.yaml", "--traces-out": "traces.jsonl", "--state": "state.sqlite3"}
    args = [arg for flag, name in files.items() for arg in (flag, str(tmp / name))]
    proc = subprocess.run(
        [sys.executable, "-m", "otelhooks", "claude-code", *args],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, "HOME": str(tmp)},
        cwd=tmp,
    )
    assert proc.returncode == 0, proc.stderr


def test_the_bridge_names_anthropic_as_the_provider(tmp_path: Path) -> None:
    (tmp_path / "hooks.yaml").write_text("hooks: []\n")
    hook(tmp_path, "UserPromptSubmit", prompt="hi")
    hook(tmp_path, "Stop", stop_hook_active=False)
    spans = read_otlp_json_lines(tmp_path / "traces.jsonl")
    turns = [s for s in spans if s["attributes"].get("gen_ai.operation.name") == "invoke_agent"]
    assert turns
    providers = {s["attributes"]["gen_ai.provider.name"] for s in turns}
    assert providers == {"anthropic"}
    assert providers <= set(SPEC["provider_well_known_values"])
