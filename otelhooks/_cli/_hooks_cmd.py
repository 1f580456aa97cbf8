"""``otelhooks hooks test PATH... --event NAME``: fire matching hooks with a sample event.

The workspace engine's "test a hook" button, for every format. The hooks of the files are
matched as the dispatcher matches them; each runs once, in registration order, under its
deadline, and the report says what it did: outcome (``ok``, ``rewritten``, ``blocked``,
``mocked``, ``queued``, ``error``, ``timeout``, ``skipped``), the command's decision, exit code and
output. On intercept events the hooks form the real intercept chain (each sees the previous one's
payload) and the final verdict is printed.
"""

from __future__ import annotations

import argparse
import json
import sys
import types
import typing
from typing import TYPE_CHECKING, Any

from otelhooks._cli._common import EXIT_UNDELIVERED, Subcommands

if TYPE_CHECKING:
    from otelhooks._events import EventSpec, HookEvent
    from otelhooks._hooks import Hook
    from otelhooks._live import Verdict

__all__ = ["add_parser", "sample_event"]

_SAMPLES: dict[str, Any] = {
    "agentId": "sample-agent",
    "operationId": "op-sample",
    "sessionKey": "sample-session",
    "userId": "sample-user",
    "input": "Sample prompt",
    "userMessage": "Sample prompt",
    "fullPrompt": "Sample prompt (expanded with instructions)",
    "model": "sample-model",
    "content": "sample content",
    "error": "sample error",
}


def _sample_value(name: str, annotation: Any) -> Any:
    if name in _SAMPLES:
        return _SAMPLES[name]
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return typing.get_args(annotation)[0]
    if origin in (typing.Union, types.UnionType):
        kinds = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _sample_value(name, kinds[0]) if kinds else None
    if annotation is int:
        return 0
    if annotation is float:
        return 0.0
    if annotation is bool:
        return True
    if origin is list or annotation is list:
        return []
    if origin is dict or annotation is dict:
        return {}
    return f"sample-{name}"


def split_tool(tool: str | None) -> tuple[str, str]:
    """``identifier/apiName`` → both; a bare name is the API name (Claude-style tools)."""
    if not tool:
        return "sample", "sampleTool"
    identifier, sep, api = tool.rpartition("/")
    return (identifier, api) if sep else ("", tool)


def sample_event(
    spec: EventSpec,
    *,
    tool: str | None = None,
    args: dict[str, Any] | None = None,
    namespace: str | None = None,
) -> tuple[HookEvent, tuple[str, ...]]:
    """A payload of ``spec``'s model with sample values, and the values matchers see.

    For tool events ``args`` are the tool arguments; for other events they override payload
    fields. ``namespace``: the tool's namespace (OpenAI Agents' ``tool_namespace``), matched
    as ``{namespace}.{apiName}`` and by the bare name, as a live call is.
    """
    from otelhooks._engine import tool_values
    from otelhooks._events import GenericEvent
    from otelhooks._matchers import tool_aliases

    model = spec.payload
    data: dict[str, Any] = {}
    values: tuple[str, ...] = ("*",)
    fields = model.model_fields
    if "apiName" in fields:
        identifier, api = split_tool(tool)
        named = tool_values(identifier, api, namespace)
        # an MCP tool's other names too, as the Claude Code bridge offers them
        values = (*named, *tool_aliases(named[0]))
        data.update(
            toolCallId="call_sample",
            identifier=identifier,
            apiName=api,
            toolName=api,
            toolNamespace=namespace,
            args={},
        )
        if "args" in fields:
            data["args"] = dict(args or {})
        else:
            data.pop("args")
            data.update(args or {})
    else:
        data.update(args or {})
    if model is GenericEvent:
        data["event"] = spec.name
        if tool:
            data["matcherValue"] = tool
            values = (tool,)
    for name, info in fields.items():
        if name not in data and (info.is_required() or name in _SAMPLES):
            data[name] = _sample_value(name, info.annotation)
    data = {k: v for k, v in data.items() if k in fields or k in (args or {})}
    return model.model_validate(data), values


def _command_detail(detail: object) -> list[str]:
    """What a command hook did, from the note its action left (exit code, output, decision)."""
    from otelhooks._actions._command_process import CommandOutcome
    from otelhooks._actions._command_verdict import CommandDecision

    if not isinstance(detail, tuple) or len(detail) != 2:
        return []
    outcome, decision = detail
    if not isinstance(outcome, CommandOutcome) or not isinstance(decision, CommandDecision):
        return []
    lines: list[str] = []
    if outcome.start_error:
        lines.append(outcome.start_error)
    else:
        code = "killed at the timeout" if outcome.timed_out else f"exit {outcome.exit_code}"
        lines.append(f"{code} after {outcome.duration_s * 1000:.0f} ms")
    for name, text, size in (
        ("stdout", outcome.stdout, outcome.stdout_bytes),
        ("stderr", outcome.stderr, outcome.stderr_bytes),
    ):
        shown = text.strip()
        if shown:
            cut = len(shown) > 500 or size > len(text.encode("utf-8", "replace"))
            shown = shown[:500] + "…" if len(shown) > 500 else shown
            lines.append(
                f"{name} ({size} bytes, shortened): {shown}" if cut else f"{name}: {shown}"
            )
    if decision.decision:
        lines.append(f"decision: {decision.decision}")
    if decision.updated_input is not None:
        lines.append(f"updatedInput: {json.dumps(decision.updated_input)}")
    return lines


def _soft(verdict: Verdict, notes: list[tuple[str, object]]) -> str | None:
    """``ask`` or ``defer`` when the block is a command's answer so (its note says what it
    answered)."""
    from otelhooks._actions._command_verdict import CommandDecision

    said = [
        detail[1].decision
        for hook_id, detail in notes
        if hook_id == verdict.decided_by
        and isinstance(detail, tuple)
        and len(detail) == 2
        and isinstance(detail[1], CommandDecision)
    ]
    return said[-1] if said and said[-1] in ("ask", "defer") else None


def _verdict_line(verdict: Verdict, original: HookEvent, notes: list[tuple[str, object]]) -> str:
    soft = _soft(verdict, notes) if verdict.blocked else None
    if soft == "ask":
        # as a dry run lists an approval: Claude Code asks the person, who decides
        return (
            f"verdict: would ask a person ({verdict.decided_by}): {verdict.reason} (Claude "
            "Code and Gemini CLI ask; Codex CLI and the in-process runtimes deny the call)"
        )
    if soft == "defer":
        return (
            f"verdict: would defer the call ({verdict.decided_by}): {verdict.reason} (Claude "
            "Code holds it for a decision made elsewhere; Codex CLI, Gemini CLI and the "
            "in-process runtimes deny the call)"
        )
    if verdict.blocked:
        return f"verdict: blocked by {verdict.decided_by}: {verdict.reason}"
    if verdict.mock is not None:
        return f"verdict: mocked by {verdict.mocked_by}: {verdict.mock.content!r}"
    if verdict.rewritten_by and verdict.payload is not None:
        before = original.model_dump(mode="json", by_alias=True, fallback=str)
        after = verdict.payload.model_dump(mode="json", by_alias=True, fallback=str)
        changed = {k: v for k, v in after.items() if before.get(k) != v}
        return f"verdict: allowed, rewritten by {', '.join(verdict.rewritten_by)}: {changed}"
    return "verdict: allowed"


def _by_kind(wider: list[Hook], hooks: list[Hook]) -> None:
    """Name the hooks that match a tool only by an MCP annotation kind: the sample call has
    none, where the MCP gateway offers the kinds its server lists for the tool."""
    kinds = [hook.id for hook in wider if hook not in hooks]
    if kinds:
        print(
            f"not evaluated: {', '.join(kinds)} match(es) an MCP tool by its annotation kinds "
            "(@destructive ...), which a sample call has none of; through the MCP gateway they "
            "match the tools its server lists so (a tool never listed: @destructive, @open_world)"
        )


def _test(args: argparse.Namespace) -> int:
    from otelhooks._actions._notes import collecting
    from otelhooks._actions._webhook_delivery import WebhookDeliverer
    from otelhooks._agents_mcp_names import prefixed_tool
    from otelhooks._cli._common import CLI_SHUTDOWN_TIMEOUT_S
    from otelhooks._config import load_config
    from otelhooks._engine import HooksEngine
    from otelhooks._errors import ConfigError
    from otelhooks._events import resolve_event
    from otelhooks._setup import shutdown_timeout
    from otelhooks._tool_kinds import ANNOTATION_KINDS

    try:
        extra = json.loads(args.args) if args.args else {}
    except ValueError as exc:
        print(f"otelhooks hooks test: --args is not valid JSON: {exc}")
        return 2
    if not isinstance(extra, dict):
        print("otelhooks hooks test: --args must be a JSON object")
        return 2
    if args.dialect:
        if args.namespace:  # no coding agent CLI names a tool by a namespace
            print("otelhooks hooks test: --namespace is an OpenAI Agents tool's, not --dialect's")
            return 2
        return _test_as(args, extra)
    try:
        spec, _ = resolve_event(args.event)
    except (ConfigError, ValueError) as exc:
        print(f"otelhooks hooks test: --event: {exc}")
        return 2
    identifier, api = split_tool(args.tool)
    own = prefixed_tool(identifier, api) if args.tool and identifier else None
    if own is not None:  # judged as the live call is: by the server's own name
        print(
            f"otelhooks hooks test: {api} is the OpenAI Agents SDK's name for {identifier}'s "
            f"tool {own} (include_server_in_tool_names); a live call is matched as "
            f"{identifier}/{own}, and so is this one"
        )
        args.tool = f"{identifier}/{own}"
    try:
        loaded = load_config(args.paths)
        payload, values = sample_event(
            spec, tool=args.tool, args=extra, namespace=args.namespace or None
        )
    except (ConfigError, ValueError) as exc:
        print(f"otelhooks hooks test: {exc}")
        return 2
    # A command: a dead URL is reported at the end, not waited for.
    deliverer = WebhookDeliverer(fail_fast=True)
    engine = HooksEngine(loaded.hooks, deliverer=deliverer)
    hooks = engine.registry.match(spec.name, values)
    shown = f"{args.event} ({spec.name})" if args.event != spec.name else spec.name
    where = f" for {values[0]}" if values != ("*",) else ""
    if "/" in values[0]:  # an identifier/apiName tool, as the MCP gateway names its calls
        _by_kind(engine.registry.match(spec.name, (*values, *ANNOTATION_KINDS)), hooks)
    if not hooks:
        print(f"no hook in these files matches {shown}{where}")
        return 1
    count = "1 hook matches" if len(hooks) == 1 else f"{len(hooks)} hooks match"
    print(f"{count} {shown}{where}")
    original = payload.model_copy(deep=True)
    timeout_s = shutdown_timeout(CLI_SHUTDOWN_TIMEOUT_S)
    try:
        with collecting() as notes:
            verdict = engine.fire(spec.name, payload, values=values)
        _report(hooks, verdict, notes)
        if spec.intercept:
            print(_verdict_line(verdict, original, notes))
            for step in verdict.steps:
                if step.permissive not in (None, "allow"):
                    print(f"permissive: {step.hook_id} would {step.permissive} (not enforced)")
    finally:
        engine.shutdown(timeout_s)
    delivered = True
    if any(step.outcome == "queued" for step in verdict.steps):
        deliverer.shutdown(timeout_s)  # delivers what was queued, within the deadline
        reports = deliverer.reports()
        print("Delivery:")
        for report in reports:
            print(f"  {report.line()}")
        delivered = not any(report.nothing_delivered for report in reports)
    if any(step.outcome in ("error", "timeout") for step in verdict.steps):
        return 1
    return 0 if delivered else EXIT_UNDELIVERED


def _test_as(args: argparse.Namespace, extra: dict[str, Any]) -> int:
    """``--dialect``: the CLI's own hook input through the bridge that CLI runs (``run_hook``,
    the live route), and its answer as the CLI gets it."""
    import os
    import tempfile

    from otelhooks.integrations.claude_code import BridgeOptions, run_hook
    from otelhooks.integrations.coding_agents._dialects import dialect_named

    event: dict[str, Any] = {
        "session_id": "sample-session",
        "hook_event_name": args.event,
        "cwd": os.getcwd(),
    }
    if args.tool:
        event |= {"tool_name": args.tool, "tool_input": extra, "tool_use_id": "call_sample"}
    else:
        event |= extra
    # the sample session's own state: it neither reads nor changes a real session's
    with tempfile.TemporaryDirectory() as folder:
        options = BridgeOptions(
            hooks=tuple(args.paths),
            state=os.path.join(folder, "state.sqlite3"),
            dialect=args.dialect,
        )
        answer = run_hook(json.dumps(event), options)
    where = f" for {args.tool}" if args.tool else ""
    print(
        f"{dialect_named(args.dialect).display_name} gets, for {args.event}{where} "
        f"(the answer of `otelhooks {args.dialect}`):"
    )
    print(f"exit code: {answer.exit_code}")
    print(f"stdout: {answer.stdout.strip() or '(empty)'}")
    if answer.stderr.strip():
        print(f"stderr: {answer.stderr.strip()}")
    # exit 1 (a failed hook process): the CLI runs the call whatever the hooks said
    code = 0 if answer.exit_code in (0, 2) else 1
    if args.dialect == "codex" and _codex_ignores_a_guarded_server(args.paths):
        return 1
    if args.dialect == "gemini" and _gemini_removes_settings(args.paths):
        return 1
    return code


def _gemini_removes_settings(paths: list[str]) -> bool:
    """Say on stderr which ``OTEL_*``, ``OTELHOOKS_*`` and ``token_env`` variables of this
    environment Gemini CLI would remove from the hooks' (its settings here and the user's) and
    the export file beside the first hooks path does not set; whether there is one."""
    import os
    from pathlib import Path

    from otelhooks._config import load_config
    from otelhooks._errors import ConfigError
    from otelhooks.integrations.coding_agents._gemini_redaction import redaction_notes
    from otelhooks.integrations.coding_agents._install import gemini_system_files, hooks_path

    try:
        hooks = load_config(paths).hooks
    except ConfigError:
        hooks = ()  # the bridge's answer above said what is wrong with the files
    system, defaults = gemini_system_files()
    layers = [defaults, hooks_path("gemini", user=True), hooks_path("gemini"), system]
    first = Path(paths[0])
    hooks_file = first / "hooks.yaml" if first.is_dir() else first
    notes = redaction_notes(os.environ, hooks_file.absolute(), hooks, layers)
    for note in notes:
        print(f"warning: {note}", file=sys.stderr)
    return bool(notes)


def _codex_ignores_a_guarded_server(paths: list[str]) -> bool:
    """Say on stderr which MCP servers of Codex's config (this folder's and the user's) Codex
    ignores for their names; whether a hook of ``paths`` names one (it guards nothing)."""
    import os

    from otelhooks._config import load_config
    from otelhooks._errors import ConfigError
    from otelhooks.integrations.coding_agents._codex_servers import (
        codex_config_files,
        ignored_server_notes,
    )

    configs = codex_config_files(os.getcwd())
    try:
        hooks = load_config(paths).hooks
    except ConfigError:
        hooks = ()  # the bridge's answer above said what is wrong with the files
    notes = ignored_server_notes(configs, hooks)
    for note in notes:
        print(f"warning: {note}", file=sys.stderr)
    return any("guards nothing" in note for note in notes)


def _report(hooks: list[Hook], verdict: Verdict, notes: list[tuple[str, object]]) -> None:
    steps = {step.hook_id: step for step in verdict.steps}
    details: dict[str, list[str]] = {}
    for hook_id, detail in notes:
        details.setdefault(hook_id, []).extend(_command_detail(detail))
    for hook in hooks:
        label = f"{hook.id} [{hook.action.kind}]"
        step = steps.get(hook.id)
        if step is None:
            print(f"- {label}: not run (the chain had ended)")
            continue
        mode = " (permissive)" if hook.mode == "permissive" else ""
        print(f"- {label}{mode}: {step.outcome}")
        lines = list(details.get(hook.id, ()))
        if step.permissive is not None:
            lines.append(f"permissive: would {step.permissive}; not enforced")
        if step.outcome == "queued":
            lines.append("queued for delivery")
        elif step.outcome == "dropped":
            lines.append("dropped: queue full")
        if step.error:
            lines.append(step.error)
        for line in lines:
            print(f"    {line}")


def add_parser(sub: Subcommands) -> None:
    from otelhooks._cli import help_of

    hooks = sub.add_parser("hooks", help="work with the hooks of config files")
    actions = hooks.add_subparsers(dest="hooks_command", metavar="ACTION")
    hooks.set_defaults(func=help_of(hooks))
    test = actions.add_parser(
        "test",
        help="fire the matching hooks with a sample event and show what each did",
        description="Load the config files, build a sample event of --event from its payload "
        "model, and run every matching hook once: outcome, decision and output of each, and the "
        "verdict of an intercept chain. Commands really run; webhooks really send.",
    )
    test.add_argument("paths", nargs="+", metavar="PATH", help="config files or folders")
    test.add_argument(
        "--event",
        required=True,
        metavar="NAME",
        help="any dialect's event name (with --dialect: that CLI's own, e.g. Gemini's BeforeTool)",
    )
    test.add_argument(
        "--dialect",
        choices=("claude-code", "codex", "gemini"),
        help="judge the event as that CLI's hook input, through the bridge it runs, and print "
        "the answer it gets (exit code, stdout, stderr); without it, as the in-process runtimes "
        "(otelhooks, LobeHub, kernel) judge it",
    )
    test.add_argument(
        "--tool", metavar="ID/API", help="the tool (identifier/apiName, or a bare tool name)"
    )
    test.add_argument(
        "--namespace",
        metavar="NS",
        help="the tool's namespace (OpenAI Agents' tool_namespace): matched as NS.apiName and "
        "by the bare apiName, as the live call is",
    )
    test.add_argument(
        "--args",
        metavar="JSON",
        help="tool arguments (tool events) or payload fields (other events), a JSON object",
    )
    test.set_defaults(func=_test)
