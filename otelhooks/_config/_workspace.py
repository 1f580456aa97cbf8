"""The workspace engine's ``*.hook.json`` files (Claude Code event names).

::

    {
      "name": "notify on edits",
      "description": "webhook after Edit, a log line when the session ends",
      "enabled": true,
      "hooks": {
        "PostToolUse": [
          {"matcher": "Edit", "type": "webhook", "url": "https://example.com/notify",
           "timeout": 10000}
        ],
        "SessionEnd": [
          {"matcher": "*", "type": "command", "command": "echo 'session ended' >> /tmp/hook.log"}
        ]
      }
    }

Rules (the seed's, plus what it leaves open):

- ``enabled: false`` skips the file (its rules are not read, as the engine does).
- Event keys are Claude Code names (any otelhooks alias is accepted); an unknown key is an error
  that suggests the closest name.
- A rule is ``{matcher, type, command | url | function, timeout}``; ``timeout`` is in
  milliseconds (command: 10,000 by default, 30,000 at most). Unknown keys are errors.
- Matchers follow the workspace rules: ``*``, an exact name (``Edit|Write`` lists names), or
  ``/regex/``.
- ``command`` rules run a shell command (:mod:`otelhooks._actions._command`); ``webhook`` rules
  POST the workspace body (``format: workspace``); ``script`` rules name
  ``path/to/file.py:function`` in ``function``, relative to the file's folder (the seed
  recognises the type but does not implement it).
- Rules get ids ``<file stem>:<Event>[<index>]`` (``notify:PostToolUse[0]``).
- A file in ``<workspace-id>/hooks/`` gives ``HOOK_WORKSPACE_ID`` (and the webhook's
  ``workspaceId``) the workspace id.
"""

from __future__ import annotations

from typing import Any, Final

from otelhooks._actions._command import CommandAction
from otelhooks._config._build import absolute_script, build_hook
from otelhooks._config._parse import Document
from otelhooks._errors import ConfigError
from otelhooks._events import resolve_event
from otelhooks._hooks import Hook

__all__ = ["WORKSPACE_SUFFIX", "load_workspace", "workspace_id_of"]

WORKSPACE_SUFFIX: Final = ".hook.json"
_FILE_KEYS: Final = ("name", "description", "enabled", "hooks")
_RULE_KEYS: Final = ("matcher", "type", "command", "url", "function", "timeout", "mode")
# a `budget` rule (otelhooks' own type: the budget guard) carries its limits instead
_BUDGET_KEYS: Final = (
    "operation_usd", "session_usd", "operation_tokens", "session_tokens", "threshold",
)  # fmt: skip
_ACTION_KEY: Final = {"command": "command", "webhook": "url", "script": "function"}
_COMMAND_DEFAULT_MS: Final = 10_000
_COMMAND_MAX_MS: Final = 30_000
_FIELD_MAP: Final = {
    "command": "command",
    "script": "function",
    "webhook.timeout": "timeout",
    "budget.operation_usd": "operation_usd",
    "budget.session_usd": "session_usd",
    "budget.operation_tokens": "operation_tokens",
    "budget.session_tokens": "session_tokens",
    "budget.threshold": "threshold",
    "webhook": "url",
    "timeout": "timeout",
    "matcher": "matcher",
    "mode": "mode",
}


def workspace_id_of(doc: Document) -> str | None:
    """The workspace a file belongs to: ``<workspace-id>/hooks/<file>``."""
    folder = doc.path.resolve().parent
    return folder.parent.name if folder.name == "hooks" and folder.parent.name else None


def _stem(doc: Document) -> str:
    name = doc.path.name
    return name[: -len(WORKSPACE_SUFFIX)] if name.endswith(WORKSPACE_SUFFIX) else doc.path.stem


def _check_file(doc: Document, errors: list[ConfigError]) -> dict[str, Any] | None:
    data = doc.data
    if not isinstance(data, dict):
        errors.append(doc.error("a workspace hook file is a JSON object {name, enabled, hooks}"))
        return None
    for key in data:
        if key not in _FILE_KEYS:
            errors.append(
                doc.error(
                    f"unknown key; a workspace hook file has {', '.join(_FILE_KEYS)}",
                    (key,),
                    field=str(key),
                )
            )
    for key in ("name", "description"):
        if key in data and not isinstance(data[key], str):
            errors.append(doc.error("must be a string", (key,), field=key))
    if "enabled" in data and not isinstance(data["enabled"], bool):
        errors.append(doc.error("must be true or false", ("enabled",), field="enabled"))
    if not isinstance(data.get("hooks"), dict):
        errors.append(
            doc.error("hooks must be an object: {EventName: [rules]}", ("hooks",), field="hooks")
        )
        return None
    return data


def _rule_fields(
    doc: Document, rule: dict[str, Any], where: tuple[str | int, ...], hook_id: str
) -> tuple[dict[str, Any] | None, list[ConfigError]]:
    """The Hook fields of one rule, or the problems with it."""
    problems: list[ConfigError] = []

    def bad(problem: str, key: str) -> None:
        problems.append(doc.error(problem, (*where, key), hook_id=hook_id, field=key))

    kind = rule.get("type")
    if kind == "budget":
        return _budget_fields(rule, bad, problems)
    for key in rule:
        if key not in _RULE_KEYS:
            bad(f"unknown key; a rule has {', '.join(_RULE_KEYS)}", str(key))
    if kind not in _ACTION_KEY:
        bad("type must be command, webhook, script or budget", "type")
        return None, problems
    action_key = _ACTION_KEY[kind]
    for other in set(_ACTION_KEY.values()) - {action_key}:
        if other in rule:
            bad(f"a {kind} rule has {action_key!r}, not {other!r}", other)
    value = rule.get(action_key)
    if not isinstance(value, str) or not value.strip():
        bad(f"a {kind} rule needs {action_key!r} (a non-empty string)", action_key)
    matcher = rule.get("matcher")
    if matcher is not None and not isinstance(matcher, str):
        bad("matcher must be a string", "matcher")
    timeout_ms = rule.get("timeout")
    if timeout_ms is not None:
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int | float):
            bad("timeout must be a number of milliseconds", "timeout")
        elif not 0 < timeout_ms <= (_COMMAND_MAX_MS if kind == "command" else 300_000):
            limit = _COMMAND_MAX_MS if kind == "command" else 300_000
            bad(f"timeout is in milliseconds: more than 0 and at most {limit}", "timeout")
    if problems:
        return None, problems
    fields: dict[str, Any] = {"matcher": matcher}
    if "mode" in rule:
        fields["mode"] = rule["mode"]  # validated by Hook, reported against this key
    if kind == "command":
        fields["command"] = value
        fields["timeout"] = (timeout_ms or _COMMAND_DEFAULT_MS) / 1000
    elif kind == "script":
        fields["script"] = absolute_script(value, doc.path.parent)
        if timeout_ms is not None:
            fields["timeout"] = timeout_ms / 1000
    else:
        webhook: dict[str, Any] = {"url": value, "format": "workspace"}
        workspace = workspace_id_of(doc)
        if workspace:
            webhook["workspaceId"] = workspace
        if timeout_ms is not None:
            webhook["timeout"] = timeout_ms / 1000
        fields["webhook"] = webhook
    return fields, problems


def load_workspace(doc: Document, errors: list[ConfigError]) -> tuple[list[Hook], str | None]:
    """The hooks of one ``*.hook.json`` document, and why it was skipped (``disabled``)."""
    data = _check_file(doc, errors)
    if data is None:
        return [], None
    if data.get("enabled") is False:
        return [], "disabled"
    stem, workspace = _stem(doc), workspace_id_of(doc)
    hooks: list[Hook] = []
    for event, rules in data["hooks"].items():
        key_loc = ("hooks", event)
        try:
            resolve_event(str(event))
        except ConfigError as exc:
            errors.append(doc.error(exc.problem, key_loc, field=f"hooks.{event}"))
            continue
        if not isinstance(rules, list):
            errors.append(doc.error("must be a list of rules", key_loc, field=f"hooks.{event}"))
            continue
        for index, rule in enumerate(rules):
            hook_id = f"{stem}:{event}[{index}]"
            where = (*key_loc, index)
            if not isinstance(rule, dict):
                errors.append(doc.error("a rule is an object", where, hook_id=hook_id))
                continue
            fields, problems = _rule_fields(doc, rule, where, hook_id)
            errors.extend(problems)
            if fields is None:
                continue
            entry = {"id": hook_id, "type": event, "dialect": "workspace", **fields}
            hook = build_hook(
                doc,
                entry,
                where,
                hook_id=hook_id,
                field_map=_FIELD_MAP,
                event_loc=key_loc,
                errors=errors,
            )
            if hook is None:
                continue
            if isinstance(hook.action, CommandAction):
                hook.action.workspace_id = workspace
            hooks.append(hook)
    return hooks, None


def _budget_fields(
    rule: dict[str, Any], bad: Any, problems: list[ConfigError]
) -> tuple[dict[str, Any] | None, list[ConfigError]]:
    """A ``budget`` rule: the budget guard's limits (validated by the budget action)."""
    for key in rule:
        if key not in ("type", "mode", *_BUDGET_KEYS):
            bad(f"unknown key; a budget rule has type, mode, {', '.join(_BUDGET_KEYS)}", str(key))
    if problems:
        return None, problems
    fields: dict[str, Any] = {"budget": {k: rule[k] for k in _BUDGET_KEYS if k in rule}}
    if "mode" in rule:
        fields["mode"] = rule["mode"]
    return fields, problems
