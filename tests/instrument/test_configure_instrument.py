"""``configure(instrument=[...])`` end to end: the SDK's calls exported with their price,
shown in dollars by ``otelhooks tree``, and uninstrumented at shutdown."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import openai
import pytest
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

import otelhooks
from otelhooks import ConfigError, read_otlp_json_lines
from tests._webhook_server import WebhookServer
from tests.instrument._llm_servers import OPENAI_PATH, openai_completion, script

GPT_4O_COST = 1000 * 2.5e-6 + 500 * 10e-6


def test_configure_instruments_prices_exports_and_uninstruments(
    tmp_path: Path, server: WebhookServer
) -> None:
    out = tmp_path / "traces.jsonl"
    oh = otelhooks.configure(
        traces_out=out, instrument=["openai"], set_global=False, structured_logging=False
    )
    try:
        script(server, OPENAI_PATH, openai_completion("gpt-4o", "hi", 1000, 500))
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="k", max_retries=0)
        with oh.operation("helper") as op, op.step():
            client.chat.completions.create(
                model="gpt-4o", messages=[{"role": "user", "content": "hello"}]
            )
    finally:
        oh.shutdown()
    assert not OpenAIInstrumentor().is_instrumented_by_opentelemetry
    spans = {s["name"]: s for s in read_otlp_json_lines(out)}
    chat = spans["chat gpt-4o"]["attributes"]
    assert chat["otelhooks.llm.cost_usd"] == pytest.approx(GPT_4O_COST)
    assert spans["invoke_agent helper"]["attributes"]["otelhooks.operation.cost_usd"] == (
        pytest.approx(GPT_4O_COST)
    )
    tree = subprocess.run(
        [sys.executable, "-m", "otelhooks", "tree", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert "chat gpt-4o" in tree
    assert "tokens in/out=1000/500  cost=$0.007500" in tree
    assert "reason=done  tokens in/out=1000/500  cost=$0.007500" in tree


def test_an_unknown_library_is_a_config_error_naming_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="no instrumentation for 'cohere'; known: openai"):
        otelhooks.instrument(["cohere"])


def test_a_library_instrumented_twice_is_refused_loudly() -> None:
    first = otelhooks.instrument(["openai"])
    try:
        with pytest.raises(ConfigError, match="openai is already instrumented"):
            otelhooks.instrument(["openai"])
    finally:
        first.uninstrument()
