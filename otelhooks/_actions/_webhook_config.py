"""Webhook configuration, validated strictly at load time (LobeHub's ``AgentHookWebhook``).

Fields (camelCase as in LobeHub, or snake_case): ``url`` (http(s), or an app-relative ``/path``
resolved against ``OTELHOOKS_WEBHOOK_BASE_URL``; never credentials in it), ``body``, ``delivery``
(``fetch`` | ``queue``; ``qstash`` is read as ``queue``), ``eventFields``, ``fallback``
(``fetch`` | ``none``), ``headers``, ``allowedEnvVars``, ``onError`` (``continue`` | ``block``),
``responseHandling`` (``ignore`` | ``toolCall``), ``timeout`` (seconds, default 30), and
``format`` (``lobehub`` | ``workspace``: the body shape) with ``workspaceId`` for the workspace
shape, and ``batchSize`` (beyond LobeHub: up to that many events of this hook per request, as a
JSON array of the single-event bodies; 1, the default, sends one event per request). Unknown keys
are errors.

Header values may contain ``${VAR}`` templates. They are stored as written and resolved only at
send time, only from ``allowedEnvVars``: a template naming any other variable is a config error,
and resolved values never appear in a config dump, a span, a log line or an event record. Every
value resolved is registered as a secret (:mod:`otelhooks._redact`), so text that quotes it (a
hook's error output) is scrubbed before otelhooks writes it anywhere.
"""

from __future__ import annotations

import os
import re
from typing import Any, Final, Literal
from urllib.parse import urljoin, urlsplit

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator

from otelhooks._env_seconds import LEAST_TIMEOUT_S
from otelhooks._redact import register_secret

__all__ = [
    "FORBIDDEN_HEADERS",
    "TEMPLATE",
    "WebhookConfig",
    "resolve_headers",
]

TEMPLATE: Final = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
BASE_URL_ENV: Final = "OTELHOOKS_WEBHOOK_BASE_URL"

# Hop-by-hop headers (RFC 9110 §7.6.1) and the ones the client must own.
FORBIDDEN_HEADERS: Final = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)


class WebhookConfig(BaseModel):
    """Where and how a webhook hook delivers. See the module docstring for every field."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    url: str
    body: dict[str, Any] | None = None
    delivery: Literal["fetch", "queue"] = "fetch"
    event_fields: list[str] | None = Field(
        default=None, validation_alias=AliasChoices("eventFields", "event_fields")
    )
    fallback: Literal["fetch", "none"] = "fetch"
    headers: dict[str, str] = Field(default_factory=dict)
    allowed_env_vars: list[str] = Field(
        default_factory=list, validation_alias=AliasChoices("allowedEnvVars", "allowed_env_vars")
    )
    on_error: Literal["continue", "block"] = Field(
        default="continue", validation_alias=AliasChoices("onError", "on_error")
    )
    response_handling: Literal["ignore", "tool_call"] = Field(
        default="ignore", validation_alias=AliasChoices("responseHandling", "response_handling")
    )
    timeout: float = Field(default=30.0, ge=LEAST_TIMEOUT_S, le=600)
    format: Literal["lobehub", "workspace"] = "lobehub"
    batch_size: int = Field(
        default=1, ge=1, le=1000, validation_alias=AliasChoices("batchSize", "batch_size")
    )
    workspace_id: str | None = Field(
        default=None, validation_alias=AliasChoices("workspaceId", "workspace_id")
    )

    @field_validator("delivery", mode="before")
    @classmethod
    def _qstash_is_queue(cls, value: Any) -> Any:
        return "queue" if value == "qstash" else value

    @field_validator("response_handling", mode="before")
    @classmethod
    def _tool_call(cls, value: Any) -> Any:
        return "tool_call" if value in ("toolCall", "tool_call") else value

    @field_validator("url")
    @classmethod
    def _check_url(cls, value: str) -> str:
        if value.startswith("/") and not value.startswith("//"):
            return value  # app-relative, resolved against OTELHOOKS_WEBHOOK_BASE_URL at send time
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https"):
            raise ValueError(f"url must be http(s) or an app-relative /path, not {value!r}")
        if not parts.hostname:
            raise ValueError("url has no host")
        if parts.username or parts.password:
            raise ValueError("url must not carry credentials; use headers with ${VAR} templates")
        return value

    @field_validator("headers")
    @classmethod
    def _check_headers(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if name.lower() in FORBIDDEN_HEADERS:
                raise ValueError(f"header {name!r} cannot be set by configuration")
            if not re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", name):
                raise ValueError(f"invalid header name {name!r}")
        return value

    @model_validator(mode="after")
    def _check_rules(self) -> WebhookConfig:
        allowed = set(self.allowed_env_vars)
        for name, header in self.headers.items():
            for var in TEMPLATE.findall(header):
                if var not in allowed:
                    raise ValueError(
                        f"header {name!r} uses ${{{var}}}, which is not in allowedEnvVars"
                    )
        if self.response_handling == "tool_call":
            if self.delivery != "fetch":
                raise ValueError(
                    "a control hook (responseHandling: toolCall) needs delivery: fetch"
                )
            if self.event_fields is not None or self.body is not None:
                raise ValueError("control hooks cannot filter or override the event payload")
            if self.batch_size != 1:
                raise ValueError("control hooks decide one call at a time: no batchSize")
        elif self.on_error == "block":
            raise ValueError("onError: block requires responseHandling: toolCall")
        return self

    @property
    def is_control(self) -> bool:
        return self.response_handling == "tool_call"

    def absolute_url(self) -> str:
        """The URL to send to (app-relative paths joined to ``OTELHOOKS_WEBHOOK_BASE_URL``)."""
        if not self.url.startswith("/"):
            return self.url
        base = os.environ.get(BASE_URL_ENV)
        if not base:
            raise LookupError(f"{self.url!r} is app-relative and {BASE_URL_ENV} is not set")
        return urljoin(base, self.url)

    def persisted(self) -> dict[str, Any]:
        """The serializable form (templates, never resolved values)."""
        return self.model_dump(mode="json", by_alias=False)


def resolve_headers(config: WebhookConfig) -> dict[str, str]:
    """Resolve ``${VAR}`` templates from the environment, only for ``allowedEnvVars``; each value
    resolved is registered as a secret (a token rotated since the hook was loaded included).

    Raises:
        LookupError: an allowed variable is not set (a ``configuration`` delivery error).
    """
    allowed = set(config.allowed_env_vars)

    def value(match: re.Match[str]) -> str:
        var = match.group(1)
        if var not in allowed:  # refused at load time; checked again so nothing slips through
            raise LookupError(f"${{{var}}} is not in allowedEnvVars")
        resolved = os.environ.get(var)
        if resolved is None:
            raise LookupError(f"environment variable {var} is not set")
        register_secret(resolved)
        return resolved

    return {name: TEMPLATE.sub(value, header) for name, header in config.headers.items()}
