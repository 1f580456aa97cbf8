"""Control webhooks in a replayed policy: reported as "would call" unless ``--live-webhooks``."""

from __future__ import annotations

from pathlib import Path

from otelhooks.replay import replay
from tests._webhook_server import Reply, WebhookServer


def _guarded_policy(folder: Path, url: str) -> Path:
    policy = folder / "guard.yaml"
    policy.write_text(
        "hooks:\n"
        "  - id: guard\n"
        "    type: beforeToolCall\n"
        '    matcher: "^fs/readFile$"\n'
        f"    webhook: {{url: '{url}/decide', responseHandling: toolCall, timeout: 5}}\n"
    )
    return policy


def test_control_webhooks_are_not_called_without_live_webhooks(
    captured_demo: Path, server: WebhookServer, tmp_path: Path
) -> None:
    server.routes["/decide"] = Reply.json({"decision": "deny", "reason": "not today"})
    report = replay([captured_demo], [_guarded_policy(tmp_path, server.url)])
    assert server.requests("/decide") == []
    waiting = [e for e in report.listed() if e["would_call"]]
    assert [e["subject"] for e in waiting] == ["fs/readFile", "fs/readFile"]
    assert all(e["would_call"] == ["guard"] and e["now"]["decision"] == "allow" for e in waiting)
    assert report.hooks["guard"].would_call == 2
    assert "guard: 2 event(s)" in report.table()
    # what a person reads first, and what CI reads, say the guard was not evaluated: not a
    # bare list of changes for a policy whose webhook would deny
    assert report.table().splitlines()[0].endswith("; 2 not evaluated (would call)")
    (summary,) = [r for r in report.records() if r["type"] == "summary"]
    assert summary["not_evaluated"] == 2


def test_live_webhooks_call_the_endpoint_and_its_decision_counts(
    captured_demo: Path, server: WebhookServer, tmp_path: Path
) -> None:
    server.routes["/decide"] = Reply.json({"decision": "deny", "reason": "not today"})
    report = replay([captured_demo], [_guarded_policy(tmp_path, server.url)], live_webhooks=True)
    calls = server.requests("/decide")
    assert [c.json()["apiName"] for c in calls] == ["readFile", "readFile"]
    assert {c.json()["args"]["path"] for c in calls} == {"notes.md", "big.log"}
    denied = [e for e in report.listed() if e["change"] == "deny"]
    assert len(denied) == 2
    assert all(
        e["now"] == {"decision": "deny", "by": ["guard"], "reason": "not today"} for e in denied
    )
    assert report.failed(["deny"]) == {"deny": 2}
