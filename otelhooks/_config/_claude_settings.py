"""Claude Code's ``settings.json`` hooks (``.claude/settings.json``, ``settings.local.json``).

::

    {
      "permissions": {"allow": ["Bash(npm test)"]},
      "hooks": {
        "PreToolUse": [
          {"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh", "timeout": 5}]}
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "echo done >> /tmp/claude.log"}]}]
      }
    }

It differs from the workspace engine's ``*.hook.json`` (same event names) in nesting: an event
holds matcher groups, each with its list of handlers. Every field of Claude Code's handler schema
(hooks reference, read 2026-11-30) is accepted:

- Only ``hooks`` is read; the rest of a settings file (``permissions``, ``env``, ``model``...)
  is Claude Code's business and is left alone.
- Matchers follow Claude Code: absent, empty or ``*`` match everything, else a regex
  (``Edit|Write`` is one), with the ``claude`` dialect.
- ``type: "command"`` runs (``command``, with ``args`` the exec form; ``async``,
  ``asyncRewake``, ``shell: "bash"`` accepted). ``type: "http"`` runs as a control webhook that
  speaks Claude Code's own request and answer (:mod:`._claude_http`; ``url``, ``headers``,
  ``allowedEnvVars``). ``prompt``, ``agent`` and ``mcp_tool`` need Claude Code's model or MCP
  connections: a :class:`ClaudeSettingsWarning` naming the file, line and hook, and the handler
  is skipped. An unknown type or key is a warning too (Claude Code adds fields); a wrong value
  of a known field is an error.
- ``timeout`` is in seconds, as Claude Code has it: 600 s by default for ``command`` and
  ``http``, and up to 600 s (:data:`~otelhooks._actions._command.MAX_CLAUDE_COMMAND_TIMEOUT_S`);
  a longer explicit value runs with 600 s and a warning.
- ``onFailure: "block"`` is the hook's ``on_error: block``: a handler that cannot run, times
  out or fails blocks the event instead of letting it go on (Claude Code's default, and
  ``continue``). As in Claude Code, any other string is read as ``block``, and ``Stop``,
  ``SubagentStop``, ``TaskCompleted`` and ``TeammateIdle`` ignore it (a warning).
- an event otelhooks does not know (a newer Claude Code's, or a typo) is a warning and its
  handlers are skipped; the file's other hooks load, as Claude Code runs them.
- a ``matcher`` on an event Claude Code has no matcher value for (``UserPromptSubmit``,
  ``Stop``, ``PostToolBatch`` ...) is ignored, as Claude Code ignores it, with a warning.
- ``statusMessage`` and ``once`` are accepted and change nothing (``once`` is only honoured in
  skill frontmatter, by Claude Code too). ``if`` gates a handler on a tool event with Claude
  Code's permission-rule syntax (:mod:`._claude_if`, failing open as Claude Code does); on other
  events Claude Code never runs a handler with ``if``, so it is skipped with a warning.
- Handlers get ids ``<file stem>:<Event>[<group>].hooks[<handler>]``
  (``settings:PreToolUse[0].hooks[1]``).
"""

from __future__ import annotations

import warnings
from typing import Any, Final

from otelhooks._actions import build_hook as bind_hook
from otelhooks._actions._command import MAX_CLAUDE_COMMAND_TIMEOUT_S
from otelhooks._config._build import build_hook
from otelhooks._config._claude_http import ClaudeHttpHandler
from otelhooks._config._claude_if import IfGate, IfRule, parse_if
from otelhooks._config._claude_mark import is_ours
from otelhooks._config._parse import Document, Loc
from otelhooks._errors import ConfigError
from otelhooks._events import resolve_event
from otelhooks._hooks import Hook

__all__ = ["ClaudeSettingsWarning", "is_claude_settings", "load_claude_settings"]

_GROUP_KEYS: Final = ("matcher", "hooks")
# `mode` is otelhooks' (enforce | permissive | disabled), not Claude Code's
_COMMON_KEYS: Final = ("type", "if", "timeout", "statusMessage", "once", "onFailure", "mode")
# Claude Code lets these events go on whatever ``onFailure`` says (it warns that it ignores it)
_ON_FAILURE_IGNORED: Final = frozenset({"Stop", "SubagentStop", "TaskCompleted", "TeammateIdle"})
# Events Claude Code has no matcher value for: it runs each of their handlers whatever its group's
# matcher says (2.1.332; checked with the real CLI on UserPromptSubmit, Stop and PostToolBatch).
# Kept as a name to match against, a prompt guard written with `"matcher": "Bash"` never ran.
_MATCHER_IGNORED: Final = frozenset(
    {
        "UserPromptSubmit",
        "Stop",
        "PostToolBatch",
        "TeammateIdle",
        "TaskCreated",
        "TaskCompleted",
        "CwdChanged",
        "WorktreeCreate",
        "WorktreeRemove",
        "MessageDisplay",
    }
)
_TYPE_KEYS: Final[dict[str, tuple[str, ...]]] = {
    "command": ("command", "args", "async", "asyncRewake", "shell"),
    "http": ("url", "headers", "allowedEnvVars"),
    "mcp_tool": ("server", "tool", "input"),
    "prompt": ("prompt", "model"),
    "agent": ("prompt", "model"),
    # otelhooks' own: the budget guard (give such files to otelhooks, not to Claude Code)
    "budget": ("operation_usd", "session_usd", "operation_tokens", "session_tokens", "threshold"),
}
_NOT_RUN: Final = {
    "prompt": "a prompt handler needs Claude Code's model",
    "agent": "an agent handler needs Claude Code's model and tools",
    "mcp_tool": "an mcp_tool handler needs Claude Code's MCP connections",
}
_MAX_WEBHOOK_TIMEOUT_S: Final = 600.0
_CLAUDE_DEFAULT_TIMEOUT_S: Final = 600.0
_TOOL_EVENTS: Final = frozenset(
    {"before_tool_call", "after_tool_call", "on_tool_call_error", "on_tool_call_denied"}
)
_FIELD_MAP: Final = {
    "command": "command",
    "timeout": "timeout",
    "on_error": "onFailure",
    "matcher": "matcher",
    "mode": "mode",
    "budget.operation_usd": "operation_usd",
    "budget.session_usd": "session_usd",
    "budget.operation_tokens": "operation_tokens",
    "budget.session_tokens": "session_tokens",
    "budget.threshold": "threshold",
}


class ClaudeSettingsWarning(UserWarning):
    """Something in a Claude Code settings file that otelhooks accepts but does not run as
    Claude Code would (the message names the file, line, hook and field)."""


# Claude Code 2.1.332's event for a skill's inline shell command (see _skill_command_groups)
_SKILL_COMMAND: Final = "PreSkillShellCommand"


def _warn(doc: Document, loc: Loc, hook_id: str, problem: str) -> None:
    line = doc.line(loc) or 0
    # warn_explicit: the warning points at the settings file and line, not at this module
    warnings.warn_explicit(
        f"hook {hook_id}: {problem}", ClaudeSettingsWarning, filename=str(doc.path), lineno=line
    )


def is_claude_settings(data: Any) -> bool:
    """An object whose ``hooks`` maps events to matcher groups that hold ``hooks`` lists."""
    hooks = data.get("hooks") if isinstance(data, dict) else None
    if not isinstance(hooks, dict):
        return False
    return any(
        isinstance(group, dict) and isinstance(group.get("hooks"), list)
        for groups in hooks.values()
        if isinstance(groups, list)
        for group in groups
    )


def _check(handler: dict[str, Any], bad: Any) -> None:
    """Type checks of the known fields (a wrong value is an error, as in Claude Code)."""
    for key in (
        *("if", "statusMessage", "shell", "url", "server", "tool", "prompt", "model"),
        "onFailure",
    ):
        if key in handler and not isinstance(handler[key], str):
            bad(f"{key} must be a string", key)
    for key in ("async", "asyncRewake", "once"):
        if key in handler and not isinstance(handler[key], bool):
            bad(f"{key} must be true or false", key)
    args = handler.get("args")
    if args is not None and not (isinstance(args, list) and all(isinstance(a, str) for a in args)):
        bad("args must be a list of strings", "args")
    headers = handler.get("headers")
    if headers is not None and not (
        isinstance(headers, dict) and all(isinstance(v, str) for v in headers.values())
    ):
        bad("headers must map names to strings", "headers")
    allowed = handler.get("allowedEnvVars")
    if allowed is not None and not (
        isinstance(allowed, list) and all(isinstance(a, str) for a in allowed)
    ):
        bad("allowedEnvVars must be a list of variable names", "allowedEnvVars")
    if "timeout" in handler:
        timeout = handler["timeout"]
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            bad("timeout must be a number of seconds, more than 0", "timeout")


def _timeout(
    doc: Document, handler: dict[str, Any], where: Loc, hook_id: str, limit: float, what: str
) -> float:
    """Claude Code's timeout (600 s default) within otelhooks' limit for ``what``."""
    timeout = float(handler.get("timeout", _CLAUDE_DEFAULT_TIMEOUT_S))
    if timeout > limit and "timeout" in handler:
        _warn(
            doc,
            (*where, "timeout"),
            hook_id,
            f"timeout {timeout:g} s is more than otelhooks runs {what} ({limit:g} s): "
            f"it runs for at most {limit:g} s",
        )
    return min(timeout, limit)


def _handler_fields(
    doc: Document, handler: Any, where: Loc, hook_id: str, event: str
) -> tuple[dict[str, Any] | None, list[ConfigError]]:
    """The Hook fields of one handler; ``None`` when it is not run (problems, or a warning)."""
    problems: list[ConfigError] = []

    def bad(problem: str, key: str) -> None:
        problems.append(doc.error(problem, (*where, key), hook_id=hook_id, field=key))

    if not isinstance(handler, dict):
        problem = "a handler is an object {type, ...}"
        return None, [doc.error(problem, where, hook_id=hook_id)]
    kind = handler.get("type")
    if not isinstance(kind, str) or not kind:
        bad("a handler needs 'type': command, http, mcp_tool, prompt or agent", "type")
        return None, problems
    if kind not in _TYPE_KEYS:
        _warn(doc, (*where, "type"), hook_id, f"type {kind!r} is unknown to otelhooks: skipped")
        return None, problems
    known = (*_COMMON_KEYS, *_TYPE_KEYS[kind])
    for key in handler:
        if key not in known:
            _warn(doc, (*where, str(key)), hook_id, f"unknown key {key!r} for a {kind} handler")
    _check(handler, bad)
    if kind in _NOT_RUN:
        if not problems:
            _warn(doc, (*where, "type"), hook_id, f"{_NOT_RUN[kind]}: otelhooks skips it")
        return None, problems
    spec, _ = resolve_event(event)
    if "if" in handler and spec.name not in _TOOL_EVENTS:
        if not problems:
            _warn(doc, (*where, "if"), hook_id, "'if' on a non-tool event: Claude Code never "
                  "runs this handler, so otelhooks skips it too")  # fmt: skip
        return None, problems
    rule: IfRule | None = None
    if "if" in handler and not problems:
        try:
            rule = parse_if(handler["if"])
        except ValueError as exc:
            bad(str(exc), "if")
    if kind == "budget":
        limits = {k: handler[k] for k in _TYPE_KEYS["budget"] if k in handler}
        return {"budget": limits}, problems
    if kind == "http":
        fields, problems = _http_fields(doc, handler, where, hook_id, bad, problems)
    else:
        fields, problems = _command_fields(
            doc, handler, where, hook_id, spec.intercept, bad, problems
        )
    if fields is not None and _blocks_on_failure(doc, handler, where, hook_id, event):
        fields["on_error"] = "block"
    if fields is None or rule is None:
        return fields, problems
    return _gated(doc, fields, where, hook_id, event, rule, bad, problems)


def _blocks_on_failure(
    doc: Document, handler: dict[str, Any], where: Loc, hook_id: str, event: str
) -> bool:
    """``onFailure`` as Claude Code reads it: any string but ``continue`` blocks when the
    handler fails (cannot start, times out, exits with another code than 0 or 2), except on
    the events Claude Code lets go on regardless."""
    value = handler.get("onFailure")
    if not isinstance(value, str) or value == "continue":
        return False
    loc = (*where, "onFailure")
    if event in _ON_FAILURE_IGNORED:
        _warn(doc, loc, hook_id, f"onFailure is ignored on {event}, by Claude Code too")
        return False
    if value != "block":
        _warn(doc, loc, hook_id, f"onFailure {value!r} is read as 'block', as Claude Code does")
    return True


def _gated(
    doc: Document,
    fields: dict[str, Any],
    where: Loc,
    hook_id: str,
    event: str,
    rule: IfRule,
    bad: Any,
    problems: list[ConfigError],
) -> tuple[dict[str, Any] | None, list[ConfigError]]:
    """A handler behind its ``if`` rule: the action runs only for calls the rule matches."""
    inner: Any = fields.get("handler")
    timeout = float(fields["timeout"])
    if inner is None:  # a command: its own action, inside the gate
        try:
            command = bind_hook(
                Hook(
                    id=hook_id, type=event, command=fields["command"], timeout=timeout,
                    dialect="claude",
                )
            )  # fmt: skip
        except (ConfigError, ValueError) as exc:
            bad(f"invalid command handler: {exc}", "command")
            return None, problems
        inner = command.action
        timeout += 1.0  # the command is killed at its own timeout first
    gate = IfGate(rule, inner)
    return {"handler": gate, "timeout": min(timeout, _MAX_WEBHOOK_TIMEOUT_S)}, problems


def _command_fields(
    doc: Document,
    handler: dict[str, Any],
    where: Loc,
    hook_id: str,
    intercept: bool,
    bad: Any,
    problems: list[ConfigError],
) -> tuple[dict[str, Any] | None, list[ConfigError]]:
    command = handler.get("command")
    if not isinstance(command, str) or not command.strip():
        bad("a command handler needs 'command' (a non-empty string)", "command")
    if handler.get("shell", "bash") not in ("bash", "powershell"):
        bad("shell is 'bash' or 'powershell'", "shell")
    if problems:
        return None, problems
    if handler.get("shell") == "powershell":
        _warn(doc, (*where, "shell"), hook_id, "otelhooks runs commands with /bin/sh, not "
              "PowerShell: skipped")  # fmt: skip
        return None, problems
    if intercept and (handler.get("async") or handler.get("asyncRewake")):
        _warn(doc, (*where, "async"), hook_id, "async on an event that can block: otelhooks "
              "runs the command before the action and honours its answer")  # fmt: skip
    args = handler.get("args")
    timeout = _timeout(doc, handler, where, hook_id, MAX_CLAUDE_COMMAND_TIMEOUT_S, "a command hook")
    # exec form (``args``): the program and its arguments, no shell, as Claude Code runs it
    run: str | list[str] = [str(command), *args] if isinstance(args, list) else str(command)
    return {"command": run, "timeout": timeout}, problems


def _http_fields(
    doc: Document,
    handler: dict[str, Any],
    where: Loc,
    hook_id: str,
    bad: Any,
    problems: list[ConfigError],
) -> tuple[dict[str, Any] | None, list[ConfigError]]:
    url = handler.get("url")
    if not isinstance(url, str) or not url.strip():
        bad("an http handler needs 'url' (a non-empty string)", "url")
    if problems:
        return None, problems
    timeout = _timeout(doc, handler, where, hook_id, _MAX_WEBHOOK_TIMEOUT_S, "a webhook")
    try:
        run = ClaudeHttpHandler(
            str(url),
            headers=handler.get("headers"),
            allowed_env_vars=handler.get("allowedEnvVars") or (),
            timeout=timeout,
            hook_id=hook_id,
        )
    except ValueError as exc:
        detail = exc.errors()[0]["msg"] if hasattr(exc, "errors") else str(exc)
        bad(f"invalid http handler: {detail}", "url")
        return None, problems
    # the Hook's own deadline is a safety net past the HTTP timeout, as for any webhook
    return {"handler": run, "timeout": min(timeout + 1.0, _MAX_WEBHOOK_TIMEOUT_S)}, problems


def _skill_command_groups(doc: Document, groups: Any, key_loc: Loc, stem: str) -> None:
    """``PreSkillShellCommand`` (Claude Code 2.1.332: a skill's inline shell command), which
    ``claude-code install`` hooks: its entry is the bridge, which judges the command with the
    ``PreToolUse`` guards. Another handler there runs in Claude Code only: a warning, skipped
    (run on every ``PreToolUse`` it would judge calls it was never written for)."""
    for g, group in enumerate(groups if isinstance(groups, list) else ()):
        handlers = group.get("hooks") if isinstance(group, dict) else None
        for h, handler in enumerate(handlers if isinstance(handlers, list) else ()):
            if not is_ours(handler):
                _warn(doc, (*key_loc, g, "hooks", h), f"{stem}:{_SKILL_COMMAND}[{g}].hooks[{h}]",
                      "Claude Code runs this handler on a skill's inline shell command; "
                      "otelhooks skips it (its PreToolUse guards judge such commands)")  # fmt: skip


def load_claude_settings(doc: Document, errors: list[ConfigError]) -> list[Hook]:
    """The hooks of one Claude Code settings document; problems go to ``errors``."""
    stem = doc.path.stem
    hooks: list[Hook] = []
    for event, groups in doc.data["hooks"].items():
        key_loc: tuple[str | int, ...] = ("hooks", event)
        if event == _SKILL_COMMAND:
            _skill_command_groups(doc, groups, key_loc, stem)
            continue
        try:
            resolve_event(str(event))
        except ConfigError as exc:
            # Claude Code skips an event it does not know and runs the file's other hooks; an
            # event of a newer Claude Code (2.1.332's PreModelSwitch, before it was mapped) made
            # this whole file an error, and the bridge then ran none of its guards (exit 1)
            _warn(doc, key_loc, f"{stem}:{event}", f"{exc.problem}: its handlers are not run")
            continue
        if not isinstance(groups, list):
            errors.append(
                doc.error("must be a list of matcher groups", key_loc, field=f"hooks.{event}")
            )
            continue
        for g, group in enumerate(groups):
            group_loc = (*key_loc, g)
            group_id = f"{stem}:{event}[{g}]"
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                errors.append(
                    doc.error(
                        "a matcher group is an object {matcher, hooks: [handlers]}",
                        group_loc,
                        hook_id=group_id,
                    )
                )
                continue
            for key in group:
                if key not in _GROUP_KEYS:
                    errors.append(
                        doc.error(
                            f"unknown key; a matcher group has {', '.join(_GROUP_KEYS)}",
                            (*group_loc, key),
                            hook_id=group_id,
                            field=str(key),
                        )
                    )
            matcher = group.get("matcher")
            ignored = event in _MATCHER_IGNORED and isinstance(matcher, str)
            if ignored and str(matcher).strip() not in ("", "*"):
                _warn(
                    doc,
                    (*group_loc, "matcher"),
                    group_id,
                    f"Claude Code ignores a matcher on {event} (it runs the handlers on "
                    f"every {event}): so does otelhooks; remove {matcher!r}",
                )
                matcher = None
            if matcher is not None and not isinstance(matcher, str):
                errors.append(
                    doc.error(
                        "matcher must be a string",
                        (*group_loc, "matcher"),
                        hook_id=group_id,
                        field="matcher",
                    )
                )
                continue
            for h, handler in enumerate(group["hooks"]):
                hook_id = f"{group_id}.hooks[{h}]"
                where = (*group_loc, "hooks", h)
                fields, problems = _handler_fields(doc, handler, where, hook_id, str(event))
                errors.extend(problems)
                if fields is None:
                    continue
                entry = {
                    "id": hook_id,
                    "type": event,
                    "dialect": "claude",
                    "matcher": None if matcher in (None, "", "*") else matcher,
                    **fields,
                }
                if isinstance(handler, dict) and "mode" in handler:
                    entry["mode"] = handler["mode"]  # validated by Hook, reported at this key
                hook = build_hook(
                    doc,
                    entry,
                    where,
                    hook_id=hook_id,
                    field_map=_FIELD_MAP,
                    event_loc=key_loc,
                    errors=errors,
                )
                if hook is not None:
                    hooks.append(hook)
    return hooks
