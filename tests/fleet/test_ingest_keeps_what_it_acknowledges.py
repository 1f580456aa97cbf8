"""``/v1/logs`` adds each model call's cost once, on both stores: a client that sends a request
again (its retry after a 503 or a lost answer) adds nothing twice and is not observed twice.

Real ``serve``, a real webhook server for the ``llm_output`` observer, a throwaway PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from otelhooks import serve
from tests._webhook_server import webhook_server
from tests.integrations.test_claude_code_serve import AUTH, TOKEN, _api_request_log


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_request_sent_twice_adds_and_reports_its_calls_once(
    tmp_path: Path, pg_url: str, kind: str
) -> None:
    with webhook_server() as sink:
        hooks = tmp_path / "llm.yaml"
        hooks.write_text(
            "hooks:\n  - id: llm-audit\n    type: llm_output\n"
            f'    webhook: {{url: "{sink.url}/llm"}}\n'
        )
        store = pg_url if kind == "postgresql" else None
        server = serve([hooks], token=TOKEN, store=store, web=False)
        try:
            headers = {**AUTH, "Content-Type": "application/x-protobuf"}
            once, other = _api_request_log(), _api_request_log()  # two calls, then a retry
            for request in (once, once, other):
                body = request.SerializeToString()
                answer = httpx.post(server.url + "/v1/logs", content=body, headers=headers)
                assert answer.status_code == 200
            sink.wait_for("/llm", 2, timeout_s=60)
        finally:
            server.stop()  # its webhooks delivered: a repeated call's would be among them
        got = [r.json() for r in sink.requests("/llm")]
    totals = sorted(g.get("payload", g)["spend"]["session"]["costUsd"] for g in got)
    assert totals == [pytest.approx(0.00036), pytest.approx(0.00072)]  # was 3 calls, $0.00108
