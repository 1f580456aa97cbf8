"""``otelhooks validate PATH...``: check config files of every format; every problem, located."""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

from otelhooks._cli._common import Subcommands

if TYPE_CHECKING:
    from otelhooks._config._load import ConfigSource
    from otelhooks._hooks import Hook

__all__ = ["add_parser", "report_lines"]


def report_lines(paths: list[str], *, strict: bool = False) -> tuple[list[str], int]:
    """The report of ``otelhooks validate`` and the number of problems.

    Every problem of every file is listed, each with its file, line, hook and field. Warnings
    (a hook that loads but may not do what its author meant, such as an invalid regex matcher
    that falls back to exact matching) are listed after the problems; with ``strict`` they are
    problems.

    Example:
        >>> lines, problems = report_lines(["examples/lobehub"])
        >>> problems
        0
    """
    from otelhooks._config import inspect_config
    from otelhooks._config._claude_settings import ClaudeSettingsWarning
    from otelhooks.integrations.claude_code._entry_timeouts import short_guard_timeouts

    lines: list[str] = []
    problems = hooks = warned = 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ClaudeSettingsWarning)
        sources = inspect_config(paths)
    # A Claude Code handler otelhooks does not run (a prompt, agent or mcp_tool guard): a
    # warning of its file, counted, which --strict fails on; the live bridge skips it too.
    skipped: dict[str, list[str]] = {}
    for caught_warning in caught:
        if issubclass(caught_warning.category, ClaudeSettingsWarning):
            skipped.setdefault(caught_warning.filename, []).append(
                f"{caught_warning.filename}:{caught_warning.lineno}: {caught_warning.message}"
            )
        else:
            warnings.warn_explicit(
                caught_warning.message,
                caught_warning.category,
                caught_warning.filename,
                caught_warning.lineno,
            )
    short = _short_timeouts(sources)
    for path, entries in short_guard_timeouts(sources).items():
        short.setdefault(path, []).extend(entries)
    for path, rules in _served_project_rules(sources).items():
        short.setdefault(path, []).extend(rules)
    ignored = _ignored_whole(sources)
    for source in sources:
        kind = source.format or "?"
        errors = [*source.problems, *ignored.get(source.path, ())]
        found = [
            *source.warnings,
            *_matcher_warnings(source.hooks),
            *short.get(source.path, ()),
            *skipped.pop(source.path, ()),
        ]
        count = len(errors) + (len(found) if strict else 0)
        shown = [] if strict else found
        if count:
            problems += count
            lines.append(f"FAIL {source.path} [{kind}]: {count} problem{'s' * (count != 1)}")
            lines.extend(f"  {problem}" for problem in errors)
            if strict:
                lines.extend(f"  {warning}" for warning in found)
            lines.extend(f"  warning: {warning}" for warning in shown)
            warned += len(shown)
            continue
        hooks += len(source.hooks)
        parts = [f"{len(source.hooks)} hook{'s' * (len(source.hooks) != 1)}"]
        if source.agent_events:
            parts.append(f"{len(source.agent_events)} agent_events")
        if source.workspace_id:
            parts.append(f"workspace {source.workspace_id}")
        if source.skipped:
            parts = [f"skipped: {source.skipped}"]
        if shown:
            parts.append(f"{len(shown)} warning{'s' * (len(shown) != 1)}")
        lines.append(f"OK   {source.path} [{kind}]: {', '.join(parts)}")
        lines.extend(f"  warning: {warning}" for warning in shown)
        warned += len(shown)
    for rest in skipped.values():  # of a file no source is named by (never expected)
        lines.extend(f"  warning: {warning}" for warning in rest)
        warned += len(rest)
    files = len(sources)
    summary = (
        f"{files} file{'s' * (files != 1)}, {hooks} hook{'s' * (hooks != 1)}, "
        f"{problems} problem{'s' * (problems != 1)}"
    )
    if warned:
        summary += f", {warned} warning{'s' * (warned != 1)}"
    lines.append(summary)
    return lines, problems


def _served_project_rules(sources: Sequence[ConfigSource]) -> dict[str, list[str]]:
    """When a Claude Code settings file validated installs otelhooks as an ``http`` hook
    (``serve``'s route), a warning for each ``if`` rule validated with it that names a path under
    the project's folder (``Edit(/src/**)``): Claude Code's HTTP hook input does not name that
    folder, so the route reads the path under the event's ``cwd``, and after a ``cd`` the rule
    misses."""
    from otelhooks._config._claude_if import IfGate
    from otelhooks._config._claude_mark import our_entries, read_settings

    def served(source: ConfigSource) -> bool:
        entries = our_entries(read_settings(source.path))
        return any(handler.get("type") == "http" for _, _, handler in entries)

    if not any(s.format == "claude_settings" and served(s) for s in sources):
        return {}
    found: dict[str, list[str]] = {}
    for source in sources:
        for hook in source.hooks:
            gate = hook.handler
            if isinstance(gate, IfGate) and gate.rule.reads_project:
                found.setdefault(source.path, []).append(
                    f"hook {hook.id}: if {gate.rule.raw!r} names a path under the project's "
                    f"folder, which Claude Code's HTTP hook input does not carry: serve's route "
                    f"reads it under the event's cwd (after a cd, the rule misses the project's "
                    f"files); use an absolute '//' path, or the command form (install without "
                    f"--http), which reads $CLAUDE_PROJECT_DIR"
                )
    return found


def _matcher_warnings(hooks: Sequence[Hook]) -> list[str]:
    """A warning for each matcher that can never match what a runtime emits
    (:func:`otelhooks._matchers.never_matches`)."""
    from otelhooks._events import EVENTS
    from otelhooks._matchers import never_matches

    found = []
    for hook in hooks:
        spec = EVENTS.get(hook.event)
        # Claude Code's PermissionRequest matches tool names too
        tools = spec is None or spec.tool_event or spec.name == "before_human_intervention"
        why = never_matches(hook.matcher, tool_event=tools)
        if why is not None:
            found.append(f"hook {hook.id} ({hook.event}): matcher never matches: {why}")
    return found


def _ignored_whole(sources: Sequence[ConfigSource]) -> dict[str, list[str]]:
    """For each Claude Code settings file validated that holds a known setting of the wrong
    type, a problem naming it: Claude Code ignores such a file whole, its hooks included."""
    from otelhooks._config._claude_mark import read_settings
    from otelhooks._config._claude_types import wrong_types

    found: dict[str, list[str]] = {}
    for source in sources:
        if source.format != "claude_settings":
            continue
        found[source.path] = [
            f"{source.path}: {wrong}: Claude Code ignores this whole file, its hooks included"
            for wrong in wrong_types(read_settings(source.path))
        ]
    return found


def _short_timeouts(sources: Sequence[ConfigSource]) -> dict[str, list[str]]:
    """For each Claude Code settings file validated, a warning for each of the hooks ``install``
    wrote whose ``timeout`` is shorter than an ``approval:`` validated with it may hold a call
    (the hooks file edited after the install; install's own rule, ``covering_timeout``): Claude
    Code would give up first and, a timed-out hook being a non-blocking error, run the tool the
    person was still asked about."""
    from otelhooks._actions._approval import longest_approval_of
    from otelhooks._config._claude_mark import our_entries, read_settings
    from otelhooks.integrations.claude_code._entries import APPROVAL_EVENTS, covering_timeout

    wait_s = longest_approval_of(hook for source in sources for hook in source.hooks)
    found: dict[str, list[str]] = {}
    for source in sources if wait_s else ():
        if source.format != "claude_settings":
            continue
        for event, _, handler in our_entries(read_settings(source.path)):
            timeout = handler.get("timeout")
            if event not in APPROVAL_EVENTS or not isinstance(timeout, int | float):
                continue
            if timeout < covering_timeout(wait_s):
                found.setdefault(source.path, []).append(
                    f"{event}: the otelhooks hook's timeout ({timeout:g} s) is shorter "
                    f"than an approval validated with it may hold the call "
                    f"({wait_s:g} s): Claude Code gives up first and goes on without the "
                    f"answer (a timed-out hook does not block); "
                    f"run `otelhooks claude-code install` again (it writes "
                    f"{covering_timeout(wait_s)} s)"
                )
    return found


_REPORTED_BY_VALIDATE = frozenset({"invalid regex matcher, falling back to exact match"})


def _validate(args: argparse.Namespace) -> int:
    import structlog.testing

    # Building a hook logs the runtime's own warning for an invalid regex; validate reports it
    # located instead, so that line is held back (any other log line goes to stderr).
    with structlog.testing.capture_logs() as logged:
        lines, problems = report_lines(args.paths, strict=args.strict)
    for entry in logged:
        if entry.get("event") not in _REPORTED_BY_VALIDATE:
            details = " ".join(f"{k}={v!r}" for k, v in entry.items() if k != "event")
            print(
                f"{entry.get('log_level', 'info')}: {entry.get('event')} {details}", file=sys.stderr
            )
    print("\n".join(lines))
    return 1 if problems else 0


def add_parser(sub: Subcommands) -> None:
    validate = sub.add_parser(
        "validate",
        help="check hook config files (every format) and print every problem",
        description="Check workspace *.hook.json files, agent-OS YAML, LobeHub-style hook lists "
        "and kernel app manifests. Folders mean the config files directly in them. Prints one "
        "line per file and every problem with its file, line, hook and field, then warnings "
        "(hooks that load but may not do what was meant, such as an invalid regex matcher); "
        "exits 0 only when there is no problem.",
    )
    validate.add_argument("paths", nargs="+", metavar="PATH", help="config files or folders")
    validate.add_argument(
        "--strict", action="store_true", help="count warnings as problems (exit 1 on any)"
    )
    validate.set_defaults(func=_validate)
