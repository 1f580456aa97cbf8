"""Real ``otelhooks serve --store postgresql://...`` processes sharing one database."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.reliability._serve_proc import ADMIN, ServeProc

EVENTS_YAML = "kind: agent_events\nname: fleet\non: [after_tool_result]\ncapacity: 1000000\n"


def events_file(tmp: Path) -> Path:
    path = tmp / "events.yaml"
    path.write_text(EVENTS_YAML)
    return path


def start_instance(tmp: Path, store: str, *extra: str) -> ServeProc:
    return ServeProc(tmp, "--store", store, "--hooks", str(events_file(tmp)), "--no-web", *extra)


def events(url: str, **params: Any) -> httpx.Response:
    return httpx.get(
        f"{url}/v1/events",
        params={"log": "fleet", **params},
        headers={"Authorization": f"Bearer {ADMIN}"},
        timeout=30,
    )


def all_records(url: str) -> list[dict[str, Any]]:
    """Every record, read by cursor in pages."""
    found: list[dict[str, Any]] = []
    since = 0
    for _ in range(10_000):
        body = events(url, mode="drain", since=since, limit=1000).json()
        found += body["events"]
        since = body["next_since"]
        if not body["has_more"]:
            return found
    raise AssertionError("the log did not end")
