"""Webhook configuration is validated strictly when the hook is registered."""

from __future__ import annotations

from typing import Any

import pytest

from otelhooks import ConfigError, Hook, WebhookConfig
from otelhooks._actions._webhook_config import resolve_headers


def webhook_hook(webhook: dict[str, Any], **options: Any) -> Hook:
    from otelhooks._actions import build_hook

    return build_hook({"id": "w", "type": "afterToolCall", "webhook": webhook, **options})


def error_of(webhook: dict[str, Any], **options: Any) -> ConfigError:
    from otelhooks._actions import build_hook as coerce_hook

    with pytest.raises(ConfigError) as info:
        coerce_hook({"id": "w", "type": "afterToolCall", "webhook": webhook, **options})
    return info.value


def test_a_minimal_webhook_is_valid_with_lobehub_defaults() -> None:
    config = WebhookConfig.model_validate({"url": "https://example.test/hooks"})
    assert config.delivery == "fetch"
    assert config.fallback == "fetch"
    assert config.on_error == "continue"
    assert config.timeout == 30.0
    assert config.response_handling == "ignore"


def test_camel_case_and_snake_case_fields_are_both_accepted() -> None:
    camel = WebhookConfig.model_validate(
        {
            "url": "http://h.test",
            "allowedEnvVars": ["T"],
            "headers": {"A": "${T}"},
            "eventFields": ["x"],
        }
    )
    snake = WebhookConfig.model_validate(
        {
            "url": "http://h.test",
            "allowed_env_vars": ["T"],
            "headers": {"A": "${T}"},
            "event_fields": ["x"],
        }
    )
    assert camel == snake


def test_qstash_delivery_reads_as_the_durable_queue() -> None:
    assert (
        WebhookConfig.model_validate({"url": "http://h.test", "delivery": "qstash"}).delivery
        == "queue"
    )


def test_unknown_keys_are_errors_naming_the_field() -> None:
    error = error_of({"url": "http://h.test", "retries": 3})
    assert (error.hook_id, error.field) == ("w", "webhook.retries")


@pytest.mark.parametrize("url", ["ftp://h.test/x", "file:///etc/passwd", "h.test/x", "//h.test"])
def test_urls_must_be_http_or_app_relative(url: str) -> None:
    assert error_of({"url": url}).field == "webhook.url"


def test_credentials_in_the_url_are_refused() -> None:
    error = error_of({"url": "https://user:secret@h.test/x"})
    assert "credentials" in str(error)
    assert "secret" not in str(error)


def test_app_relative_urls_resolve_against_the_base_url_at_send_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = WebhookConfig.model_validate({"url": "/api/hooks"})
    monkeypatch.setenv("OTELHOOKS_WEBHOOK_BASE_URL", "http://127.0.0.1:9/app/")
    assert config.absolute_url() == "http://127.0.0.1:9/api/hooks"


@pytest.mark.parametrize("header", ["Host", "Connection", "Transfer-Encoding", "content-length"])
def test_hop_by_hop_and_host_headers_cannot_be_set(header: str) -> None:
    assert "cannot be set" in str(error_of({"url": "http://h.test", "headers": {header: "x"}}))


def test_a_template_naming_a_variable_outside_allowed_env_vars_is_a_config_error() -> None:
    error = error_of(
        {
            "url": "http://h.test",
            "headers": {"Authorization": "Bearer ${SECRET}"},
            "allowedEnvVars": ["OTHER"],
        }
    )
    assert "SECRET" in str(error)
    assert error.field == "webhook"


def test_templates_resolve_only_from_allowed_variables_at_send_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = WebhookConfig.model_validate(
        {
            "url": "http://h.test",
            "headers": {"Authorization": "Bearer ${TOKEN}"},
            "allowedEnvVars": ["TOKEN"],
        }
    )
    monkeypatch.setenv("TOKEN", "s3cret")
    assert resolve_headers(config) == {"Authorization": "Bearer s3cret"}
    assert "s3cret" not in repr(config.persisted())
    monkeypatch.delenv("TOKEN")
    with pytest.raises(LookupError, match="TOKEN"):
        resolve_headers(config)


def test_control_hooks_need_fetch_delivery() -> None:
    error = error_of(
        {"url": "http://h.test", "responseHandling": "toolCall", "delivery": "queue"},
        type="beforeToolCall",
    )
    assert "fetch" in str(error)


def test_control_hooks_cannot_filter_or_override_the_payload() -> None:
    for extra in ({"eventFields": ["args"]}, {"body": {"x": 1}}):
        error = error_of(
            {"url": "http://h.test", "responseHandling": "toolCall", **extra}, type="beforeToolCall"
        )
        assert "cannot filter or override" in str(error)


def test_on_error_block_requires_a_control_hook() -> None:
    assert "requires responseHandling" in str(
        error_of({"url": "http://h.test", "onError": "block"})
    )


def test_control_hooks_run_only_on_before_tool_call() -> None:
    error = error_of({"url": "http://h.test", "responseHandling": "toolCall"}, type="afterToolCall")
    assert error.field == "webhook.responseHandling"


def test_a_control_hook_cannot_also_have_a_handler() -> None:
    error = error_of(
        {"url": "http://h.test", "responseHandling": "toolCall"},
        type="beforeToolCall",
        handler=print,
    )
    assert error.field == "handler"


def test_timeout_must_be_positive_and_bounded() -> None:
    assert error_of({"url": "http://h.test", "timeout": 0}).field == "webhook.timeout"
    assert error_of({"url": "http://h.test", "timeout": 3600}).field == "webhook.timeout"


def test_a_hook_with_handler_and_webhook_runs_the_handler_and_persists_the_webhook() -> None:
    hook = webhook_hook(
        {"url": "http://h.test", "headers": {"A": "${T}"}, "allowedEnvVars": ["T"]}, handler=print
    )
    assert hook.action.kind == "handler"
    persisted = hook.serializable()
    assert set(persisted) == {"id", "type", "webhook", "matcher"}
    restored = webhook_hook(persisted["webhook"])
    assert restored.action.kind == "webhook"


def test_the_persisted_form_is_revalidated_when_restored() -> None:
    persisted = webhook_hook({"url": "http://h.test"}).serializable()
    persisted["webhook"] = {**persisted["webhook"], "url": "ftp://nope"}
    from otelhooks._actions import build_hook

    with pytest.raises(ConfigError):
        build_hook(persisted)
