"""Known secrets are scrubbed from everything otelhooks writes about hooks (``otelhooks._redact``).

A secret is the value of a variable some webhook hook lists in ``allowedEnvVars``. The registry
on its own, the moments a value is registered (loading a hook, resolving its headers), the
structlog processor, and real failing hooks (a command that prints the secret, a Python hook
that raises with it) whose text must reach no span, log line or metric label unredacted.
"""

from __future__ import annotations

import io
import json
import secrets
import threading
from collections.abc import Iterator, MutableMapping
from typing import Any

import pytest
import structlog
from opentelemetry.sdk.trace import ReadableSpan
from structlog.testing import capture_logs

import otelhooks._logging
from otelhooks import HookEvent, HooksEngine, WebhookConfig, configure_logging, scrub_secrets
from otelhooks import semconv as sc
from otelhooks._actions._webhook_config import resolve_headers
from otelhooks._redact import MIN_SECRET_LENGTH, REDACTED, SecretRegistry, registry, scrub
from otelhooks.testing import TestPipeline, pipeline


@pytest.fixture
def token(monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh secret in ``$REDACT_TOKEN``, known to the process as a webhook's allowed variable."""
    value = "tok-" + secrets.token_hex(12)
    monkeypatch.setenv("REDACT_TOKEN", value)
    return value


def webhook_with_token(url: str = "http://127.0.0.1:9/n") -> dict[str, Any]:
    return {
        "id": "authed",
        "type": "onCompactError",  # loaded (so its variable is known), never fired here
        "webhook": {
            "url": url,
            "headers": {"Authorization": "Bearer ${REDACT_TOKEN}"},
            "allowedEnvVars": ["REDACT_TOKEN"],
        },
    }


# -- the registry ----------------------------------------------------------------------------------


def test_every_occurrence_of_a_registered_secret_is_replaced() -> None:
    secrets_ = SecretRegistry()
    secrets_.register("s3cr3t-value")
    assert secrets_.scrub("a s3cr3t-value, again s3cr3t-value.") == (
        f"a {REDACTED}, again {REDACTED}."
    )


def test_a_secret_that_contains_another_is_replaced_whole() -> None:
    secrets_ = SecretRegistry()
    secrets_.register("abcd")
    secrets_.register("abcdefgh")
    assert secrets_.scrub("xabcdefghx abcd") == f"x{REDACTED}x {REDACTED}"


def test_values_shorter_than_the_minimum_are_not_secrets() -> None:
    secrets_ = SecretRegistry()
    assert MIN_SECRET_LENGTH == 4
    assert not secrets_.register("on")
    assert not secrets_.register("123")
    assert not secrets_.register("")
    assert not secrets_.register(None)
    assert len(secrets_) == 0
    assert secrets_.scrub("on 123") == "on 123"


def test_secrets_with_pattern_characters_are_taken_literally() -> None:
    secrets_ = SecretRegistry()
    secrets_.register("a.b*c(d)")
    assert secrets_.scrub("aXbbc(d) a.b*c(d)") == f"aXbbc(d) {REDACTED}"


def test_without_secrets_the_text_is_returned_as_it_is() -> None:
    text = "nothing to hide " * 10
    assert SecretRegistry().scrub(text) is text


def test_registering_while_scrubbing_on_other_threads_is_safe() -> None:
    secrets_ = SecretRegistry()
    values = [f"secret-{i:04d}" for i in range(200)]
    errors: list[BaseException] = []
    stop = threading.Event()

    def scrubbing() -> None:
        try:
            while not stop.is_set():
                secrets_.scrub(" ".join(values))
        except BaseException as exc:
            errors.append(exc)

    readers = [threading.Thread(target=scrubbing) for _ in range(4)]
    for reader in readers:
        reader.start()
    writers = [
        threading.Thread(target=lambda part=values[i::4]: [secrets_.register(v) for v in part])
        for i in range(4)
    ]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    stop.set()
    for reader in readers:
        reader.join()
    assert errors == []
    assert len(secrets_) == len(values)
    assert secrets_.scrub(" ".join(values)) == " ".join([REDACTED] * len(values))


# -- when values are registered ----------------------------------------------------------------


def test_registering_a_webhook_hook_makes_its_allowed_variables_secrets(token: str) -> None:
    HooksEngine().register([webhook_with_token()])
    assert token in registry
    assert scrub(f"Bearer {token}") == f"Bearer {REDACTED}"


def test_resolving_headers_registers_a_value_set_after_loading(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = WebhookConfig.model_validate(webhook_with_token()["webhook"])
    rotated = "rotated-" + secrets.token_hex(12)
    monkeypatch.setenv("REDACT_TOKEN", rotated)
    assert rotated not in registry
    assert resolve_headers(config) == {"Authorization": f"Bearer {rotated}"}
    assert rotated in registry


# -- log lines ---------------------------------------------------------------------------------


@pytest.fixture
def structlog_restored() -> Iterator[None]:
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


def test_the_log_processor_scrubs_every_value_and_the_message(
    token: str, structlog_restored: None
) -> None:
    HooksEngine().register([webhook_with_token()])
    out = io.StringIO()
    configure_logging(json=True)
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(out))
    log = structlog.get_logger("otelhooks")
    log.warning(f"saw {token}", error=RuntimeError(f"bad {token}"), items=[token], n=3, ok=True)
    line = json.loads(out.getvalue())
    assert token not in out.getvalue()
    assert line["event"] == f"saw {REDACTED}"
    assert line["error"] == f"RuntimeError: bad {REDACTED}"
    assert line["items"] == f"['{REDACTED}']"
    assert (line["n"], line["ok"]) == (3, True)  # what holds no secret keeps its type


def test_the_log_processor_scrubs_a_traceback(token: str, structlog_restored: None) -> None:
    HooksEngine().register([webhook_with_token()])
    out = io.StringIO()
    configure_logging(json=True)
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(out))
    try:
        raise ValueError(f"connect failed with {token}")
    except ValueError:
        structlog.get_logger("otelhooks").exception("hook crashed")
    assert token not in out.getvalue()
    assert f"ValueError: connect failed with {REDACTED}" in json.loads(out.getvalue())["exception"]


def test_without_secrets_the_log_processor_leaves_the_line_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(otelhooks._logging, "registry", SecretRegistry())
    error = RuntimeError("tok-0123456789")
    event: dict[str, Any] = {"event": "x", "error": error}
    assert scrub_secrets(None, "warning", event) == {"event": "x", "error": error}
    assert event["error"] is error  # not even rendered as text


# -- real failing hooks ------------------------------------------------------------------------


def span_texts(spans: list[ReadableSpan]) -> list[str]:
    """Everything a span says in text: name, status, attributes, events (names and attributes)."""
    texts: list[str] = []
    for span in spans:
        texts += [span.name, span.status.description or ""]
        texts += [f"{k}={v!s}" for k, v in (span.attributes or {}).items()]
        for event in span.events:
            texts.append(event.name)
            texts += [f"{k}={v!s}" for k, v in (event.attributes or {}).items()]
    return texts


def metric_labels(pipe: TestPipeline) -> list[str]:
    assert pipe.oh.metrics.flush(10.0)
    data = pipe.reader.get_metrics_data()
    assert data is not None
    return [
        f"{k}={v!s}"
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for metric in sm.metrics
        for point in metric.data.data_points
        for k, v in (point.attributes or {}).items()
    ]


def run_vault(pipe: TestPipeline) -> str:
    with pipe.tracer.operation("agent") as op, op.step() as step:
        result = step.run_tool("vault", "lookup", {"q": "x"}, lambda q: "found")
    pipe.flush()
    return result.content


def assert_recorded_redacted(
    pipe: TestPipeline, logs: list[MutableMapping[str, Any]], token: str, hook_ids: list[str]
) -> None:
    """The failures are recorded (on the tool span and in log lines) with the secret replaced,
    and the secret is in no span, log line or metric label."""
    spans = pipe.spans()
    (tool,) = [s for s in spans if s.name == "execute_tool lookup"]
    recorded = (tool.attributes or {}).get(sc.HOOK_ERRORS)
    assert isinstance(recorded, tuple)
    errors = [str(e) for e in recorded]
    for hook_id in hook_ids:
        (error,) = [e for e in errors if e.startswith(f"{hook_id}: ")]
        assert REDACTED in error, error
    assert [t for t in span_texts(spans) if token in t] == []
    rendered = json.dumps(logs, default=str)
    assert token not in rendered
    assert REDACTED in rendered
    assert [label for label in metric_labels(pipe) if token in label] == []


def test_a_command_printing_the_secret_and_failing_is_recorded_redacted(
    pipe: TestPipeline, token: str
) -> None:
    leak = 'echo "using $REDACT_TOKEN" >&2; echo "out $REDACT_TOKEN"; exit 1'
    pipe.register(
        webhook_with_token(),
        {"id": "leaky", "type": "PreToolUse", "command": leak},
        {"id": "leaky-observer", "type": "PostToolUse", "command": leak},
    )
    with capture_logs() as logs:
        assert run_vault(pipe) == "found"  # a failing hook never stops the call
    assert_recorded_redacted(pipe, logs, token, ["leaky"])
    failed = [e for e in logs if e["event"] == "command hook failed"]
    assert {e["hook_id"] for e in failed} == {"leaky", "leaky-observer"}
    for entry in failed:
        assert entry["stderr"].strip() == f"using {REDACTED}"
        assert entry["stdout"].strip() == f"out {REDACTED}"


def test_a_python_hook_raising_with_the_secret_is_recorded_redacted(
    pipe: TestPipeline, token: str
) -> None:
    def leaky(event: HookEvent) -> None:
        raise ConnectionError(f"vault refused token {token}")

    pipe.register(
        webhook_with_token(),
        {"id": "leaky", "type": "beforeToolCall", "handler": leaky},
        {"id": "leaky-observer", "type": "afterToolCall", "handler": leaky},
    )
    with capture_logs() as logs:
        assert run_vault(pipe) == "found"
    assert_recorded_redacted(pipe, logs, token, ["leaky"])
    observed = [e for e in logs if e["event"] == "observer hook failed"]
    assert [e["error"] for e in observed] == [f"vault refused token {REDACTED}"]


def test_a_secret_a_user_registers_is_scrubbed_from_a_failing_hook() -> None:
    from otelhooks import register_secret

    own = "vault-" + secrets.token_hex(12)  # the hook's own token: no webhook names it
    assert register_secret(own)

    def leaky(event: HookEvent) -> None:
        raise ConnectionError(f"vault refused token {own}")

    with pipeline() as pipe:
        pipe.register({"id": "leaky", "type": "beforeToolCall", "handler": leaky})
        with capture_logs() as logs:
            assert run_vault(pipe) == "found"
        assert_recorded_redacted(pipe, logs, own, ["leaky"])


def test_a_block_reason_quoting_the_secret_is_redacted(pipe: TestPipeline, token: str) -> None:
    pipe.register(
        webhook_with_token(),
        {"id": "guard", "type": "PreToolUse", "command": 'echo "no: $REDACT_TOKEN" >&2; exit 2'},
    )
    with capture_logs() as logs:
        content = run_vault(pipe)
    assert content == f"no: {REDACTED}"  # the reason the agent is given
    tool = pipe.span("execute_tool lookup")
    assert (tool.attributes or {})[sc.HOOK_DECISION_REASON] == f"no: {REDACTED}"
    assert [t for t in span_texts(pipe.spans()) if token in t] == []
    assert token not in json.dumps(logs, default=str)


def test_a_tool_error_quoting_the_secret_is_recorded_redacted(
    pipe: TestPipeline, token: str
) -> None:
    seen: list[HookEvent] = []
    pipe.register(
        webhook_with_token(),
        {"id": "errors", "type": "on_tool_call_error", "handler": seen.append},
        {"id": "failed", "type": "on_error", "handler": seen.append},
    )

    def lookup(q: str) -> str:
        raise PermissionError(f"vault refused token {token}")

    with capture_logs() as logs, pipe.tracer.operation("agent") as op, op.step() as step:
        result = step.run_tool("vault", "lookup", {"q": "x"}, lookup)
    pipe.flush()
    assert result.success is False
    assert result.error == f"vault refused token {REDACTED}"
    tool = pipe.span("execute_tool lookup")
    assert tool.status.description == f"vault refused token {REDACTED}"
    (exception,) = [e for e in tool.events if e.name == "exception"]
    attrs = exception.attributes or {}
    assert attrs["exception.message"] == f"vault refused token {REDACTED}"
    assert REDACTED in str(attrs["exception.stacktrace"])
    assert [t for t in span_texts(pipe.spans()) if token in t] == []
    assert token not in json.dumps([e.model_dump() for e in seen], default=str)
    assert token not in json.dumps(logs, default=str)


def test_a_secret_cut_by_the_log_excerpt_leaves_no_prefix_behind(
    pipe: TestPipeline, token: str
) -> None:
    from otelhooks._actions._command_env import LOG_EXCERPT_CHARS

    # the token starts a few characters before the excerpt's end: cut first, it would survive
    # as a prefix that no longer matches the registered secret
    pad = "x" * (LOG_EXCERPT_CHARS - 5)
    leak = f'printf "%s%s" "{pad}" "$REDACT_TOKEN" >&2; exit 1'
    pipe.register(webhook_with_token(), {"id": "leaky", "type": "PostToolUse", "command": leak})
    with capture_logs() as logs:
        assert run_vault(pipe) == "found"
        pipe.flush()
    (failed,) = [e for e in logs if e["event"] == "command hook failed"]
    assert token[:5] not in failed["stderr"]
    assert failed["stderr"].startswith(pad)


def test_a_block_reason_cut_at_the_cap_keeps_no_prefix_of_a_secret(token: str) -> None:
    from otelhooks import HooksEngine
    from otelhooks._actions._command_output import REASON_CAP_CHARS, cut_reason

    HooksEngine().register([webhook_with_token()])  # the token is a known secret now
    reason = "x" * (REASON_CAP_CHARS - 5) + token
    cut = cut_reason(reason)
    assert cut is not None
    assert token[:5] not in cut
