"""Which settings Gemini CLI keeps from a hook's environment, said at install time.

Gemini CLI 0.61 runs hooks with a sanitized environment (``sanitizeEnvironment`` in its core):
under GitHub Actions (``GITHUB_SHA`` set, or ``SURFACE=Github``) every variable but ``PATH``,
``HOME`` and a few others; with ``security.environmentVariableRedaction.enabled`` every variable
whose name holds TOKEN, SECRET, KEY, AUTH, CERT ... or whose value looks like a credential (a
JWT, ``user:password@`` in a URL). An ``OTEL_EXPORTER_OTLP_*`` setting, an ``OTELHOOKS_*`` one or
an approval's ``token_env`` so removed never reaches the bridge: the spans' OTLP export is lost
without a word, the approval cannot ask serve.

otelhooks does not read them around the redaction (from Gemini's own process, say): that would
undo what the user asked Gemini for. The export file beside the hooks file (``otelhooks.env``)
is the channel meant for them: the bridge reads ``OTEL_*``, ``OTELHOOKS_*`` and the approvals'
``token_env`` there. So ``otelhooks gemini install`` names, loudly, each such variable of its
own environment that Gemini would remove and the export file does not set, by Gemini's own rule
(ported from 0.61; ``tests/coding_agents_cli/test_gemini_redacted_export.py`` runs the real CLI
on the strict case: the spans are lost, and arrive from the export file).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

from otelhooks._actions._approval import ApprovalAction
from otelhooks._errors import ConfigError
from otelhooks._hooks import Hook
from otelhooks.integrations.coding_agents._environment import EXPORT_FILE, read_export_file
from otelhooks.integrations.coding_agents._gemini_json import gemini_json

__all__ = ["gemini_removes", "redaction_notes"]

# Gemini CLI 0.61's lists (packages/core, environmentSanitization)
_ALWAYS_ALLOWED: Final = frozenset(
    [
        "PATH",
        "SYSTEMROOT",
        "COMSPEC",
        "PATHEXT",
        "WINDIR",
        "TEMP",
        "TMP",
        "USERPROFILE",
        "SYSTEMDRIVE",
        "HOME",
        "LANG",
        "SHELL",
        "TMPDIR",
        "USER",
        "LOGNAME",
        "TERM",
        "COLORTERM",
        "ADDITIONAL_CONTEXT",
        "AVAILABLE_LABELS",
        "BRANCH_NAME",
        "DESCRIPTION",
        "EVENT_NAME",
        "GITHUB_ENV",
        "IS_PULL_REQUEST",
        "ISSUES_TO_TRIAGE",
        "ISSUE_BODY",
        "ISSUE_NUMBER",
        "ISSUE_TITLE",
        "PULL_REQUEST_NUMBER",
        "REPOSITORY",
        "TITLE",
        "TRIGGERING_ACTOR",
    ]
)
_NEVER_ALLOWED: Final = frozenset(
    [
        "CLIENT_ID",
        "DB_URI",
        "CONNECTION_STRING",
        "AWS_DEFAULT_REGION",
        "AZURE_CLIENT_ID",
        "AZURE_TENANT_ID",
        "SLACK_WEBHOOK_URL",
        "TWILIO_ACCOUNT_SID",
        "DATABASE_URL",
        "GOOGLE_CLOUD_PROJECT",
        "GOOGLE_CLOUD_ACCOUNT",
        "FIREBASE_PROJECT_ID",
    ]
)
_NEVER_NAMES: Final = re.compile(
    r"TOKEN|SECRET|PASSWORD|PASSWD|KEY|AUTH|CREDENTIAL|CREDS|PRIVATE|CERT", re.IGNORECASE
)
_NEVER_VALUES: Final = re.compile(
    r"-----BEGIN (RSA|OPENSSH|EC|PGP) PRIVATE KEY-----|-----BEGIN CERTIFICATE-----"
    r"|(https?|ftp|smtp)://[^:\s]{1,1024}:[^@\s]{1,1024}@"
    r"|(ghp|gho|ghu|ghs|ghr|github_pat)_[a-zA-Z0-9_]{36,}|AIzaSy[a-zA-Z0-9_\\-]{33}"
    r"|AKIA[A-Z0-9]{16}|eyJ[a-zA-Z0-9_-]{0,10240}\.[a-zA-Z0-9_-]{0,10240}\.[a-zA-Z0-9_-]{0,10240}"
    r"|(s|r)k_(live|test)_[0-9a-zA-Z]{24}|xox[abpr]-[a-zA-Z0-9-]+",
    re.IGNORECASE,
)


def gemini_removes(
    name: str,
    value: str,
    *,
    strict: bool,
    allowed: frozenset[str] = frozenset(),
    blocked: frozenset[str] = frozenset(),
) -> bool:
    """Whether Gemini CLI 0.61 removes ``name=value`` from a hook's environment with redaction
    on (``strict``: under GitHub Actions). ``allowed`` and ``blocked``: the settings' lists,
    upper case.

    Example:
        >>> gemini_removes("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318", strict=True)
        True
        >>> gemini_removes("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318", strict=False)
        False
    """
    key = name.upper()
    if key.startswith("GEMINI_CLI_"):
        return False
    if value and _NEVER_VALUES.search(value):
        return True
    if key.startswith("GIT_CONFIG_") or key in allowed:
        return False
    if key in blocked:
        return True
    if key in _ALWAYS_ALLOWED:
        return False
    if key in _NEVER_ALLOWED or strict:
        return True
    return _NEVER_NAMES.search(key) is not None


def _redaction(settings_files: Iterable[Path]) -> dict[str, Any]:
    """``security.environmentVariableRedaction`` merged over ``settings_files`` (later wins;
    the lists are joined)."""
    merged: dict[str, Any] = {"allowed": set(), "blocked": set()}
    for path in settings_files:
        try:
            redaction = gemini_json(path)["security"]["environmentVariableRedaction"]
        except (KeyError, TypeError):
            continue
        if not isinstance(redaction, dict):
            continue
        if isinstance(redaction.get("enabled"), bool):
            merged["enabled"] = redaction["enabled"]
        for field in ("allowed", "blocked"):
            if isinstance(redaction.get(field), list):
                merged[field] |= {str(n).upper() for n in redaction[field]}
    return merged


def redaction_notes(
    environ: Mapping[str, str],
    hooks_file: Path,
    hooks: Iterable[Hook],
    settings_files: Iterable[Path],
) -> list[str]:
    """A sentence naming the ``OTEL_*``, ``OTELHOOKS_*`` and ``token_env`` variables of
    ``environ`` that Gemini CLI would remove from the hooks' environment and the export file
    beside ``hooks_file`` does not set; empty when none."""
    tokens = {
        h.action.config.token_env
        for h in hooks
        if isinstance(h.action, ApprovalAction) and h.action.config.token_env
    }
    wanted = {k for k in environ if k.startswith(("OTEL_", "OTELHOOKS_")) or k in tokens}
    redaction = _redaction(settings_files)
    strict = bool(environ.get("GITHUB_SHA")) or environ.get("SURFACE") == "Github"
    if not wanted or not (strict or redaction.get("enabled")):
        return []
    export = hooks_file.parent / EXPORT_FILE
    try:
        in_file = set(read_export_file(export, tokens)) if export.is_file() else set()
    except ConfigError:
        in_file = set()
    removed = sorted(
        k
        for k in wanted - in_file
        if gemini_removes(
            k,
            environ[k],
            strict=strict,
            allowed=frozenset(redaction["allowed"]),
            blocked=frozenset(redaction["blocked"]),
        )
    )
    if not removed:
        return []
    why = (
        "GITHUB_SHA is set: its GitHub Actions redaction keeps hardly any variable"
        if strict
        else "security.environmentVariableRedaction is enabled"
    )
    return [
        f"Gemini CLI removes {', '.join(removed)} from the hooks' environment ({why}): the "
        f"bridge never sees them, so spans meant for OTLP are lost and an approval cannot "
        f"reach serve; put them in {export} (mode 0600), which the bridge reads"
    ]
