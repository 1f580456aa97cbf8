"""Tests import otelhooks' public modules; a private one only to test a private rule (#28).

Each test file that imports a private module (a module path with a ``_``-led part, or a
``_``-led name) is listed here with the rule it tests. A reason starting ``setup:`` is a debt,
not a rule: the file sets up through a private helper that has no public equivalent yet.
A new test file that imports a private module fails until it is listed (or imports the public
module instead: ``otelhooks``, ``otelhooks.events``, ``otelhooks.testing``, ``otelhooks.semconv``,
``otelhooks.replay``, ``otelhooks.mcp``, ``otelhooks.integrations.*``).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

TESTS = Path(__file__).resolve().parent

_CLI = "the CLI's parser and entry point (the `otelhooks` console script), run in-process"
_STORE = "the PostgreSQL store's own rules (schema, SQL, shared state)"

ALLOWED: dict[str, str] = {
    "test_span_limits_env.py": "the span limits every provider otelhooks makes reads, against "
    "the SDK's own reading",
    "integrations/test_late_client_constants.py": "the hook client's standard-library copies "
    "of the bridge's times, against the bridge's own",
    "integrations/test_export_file_twins.py": "the bridge's export-file parser, against the "
    "hook client's standard-library twin",
    "claude_code_cli/test_real_claude_code.py": "the OTLP decoder",
    "integrations/test_claude_code_zero_hop.py": "the hook route's runner, held whole to prove "
    "the zero-hop road",
    "integrations/test_coding_agents_hooks_now.py": "the bridge's answering events, each held "
    "to the hooks hooks_now names",
    "coding_agents_cli/test_tool_kinds_captured.py": "the tool-kind table each dialect maps to",
    "conformance/claude_code/test_adapters_doc_claude.py": _CLI + "; the bridge's event map",
    "conformance/claude_code/test_hook_events.py": "the event map; the canonical JSON",
    "conformance/claude_code/test_settings_schema.py": "the settings `if` gate and warnings",
    "deny_matrix/test_deny_matrix.py": "the Claude Code HTTP hook route, served without `serve`",
    "fleet/test_fleet_slow_store.py": "the advisory lock of the shared sessions",
    "fleet/test_shared_spend.py": "the spend each session store keeps, bounded",
    "fleet/test_cost_records_refused.py": "the spend each session store keeps",
    "fleet/test_logs_flood.py": "the key the spend of a session is kept under",
    "mcp/test_mcp_argument_types.py": "the rule an MCP tool's schema gives its arguments "
    "(types refused, defaults filled), on each schema shape the SDK lists",
    "reliability/test_grpc_export_losses.py": "the gRPC span exporter's reading of a status "
    "and a partial success, on its delivery tracker",
    "reliability/test_grpc_export_answers.py": "the exporter a coding agent's hook process "
    "builds, on its delivery tracker (fail-fast, its cap)",
    "reliability/test_export_encoding.py": "the gRPC span exporter's answer to a span the "
    "encoder refuses, on its delivery tracker",
    "web/test_inbox_answers.py": "which answers the inbox keeps for their askers",
    "web/test_inbox_listing.py": "the approvals route and inbox, read as the page reads them",
    "fleet/test_shared_listing.py": "the fleet's inbox and its read of changes, held to the "
    "route's one read",
    "replay/test_replay_fidelity.py": "that a dry run puts nothing in the process's approvals "
    "inbox",
    "web/test_inbox_orphans.py": "the reason a withdrawn approval gives",
    "web/test_card_askers.py": "the lease of an approval card (shortened) and its reason",
    "fleet/test_shared_card_askers.py": "the lease of an approval card and its reason",
    "web/test_claude_code_approval.py": "the reason a withdrawn approval gives",
    "reliability/test_daemon_approvals.py": "the reason a withdrawn approval gives",
    "fleet/test_pg_eventlog.py": _STORE,
    "fleet/test_pg_outbox.py": _STORE,
    "fleet/test_shared_approvals.py": _STORE,
    "fleet/test_shared_call_index.py": _STORE,
    "fleet/test_shared_sessions.py": _STORE,
    "fleet/test_shared_web_index.py": _STORE,
    "fleet/test_store_schema.py": _STORE,
    "instrument/test_foreign_model_spans.py": "the bound on open foreign model spans",
    "test_refused_tool_call.py": "what the web view reads of a refused call's span",
    "integration/test_demo_command.py": "the demo's own event list and hooks file",
    "integrations/test_adapters_doc.py": _CLI,
    "integrations/test_agent_telemetry_joins.py": "the bridge's telemetry joins and session bounds",
    "integrations/test_agent_tool_links.py": "the CLI tool span memory's bounds",
    "integrations/test_claude_code_answers.py": "how hook answers combine into one",
    "integrations/test_claude_code_call_index.py": "the server sessions' call index",
    "integrations/test_claude_code_fair.py": "the fair runner",
    "integrations/test_claude_code_install.py": "our marks, older forms, async events; " + _CLI,
    "integrations/test_claude_code_tool_names.py": "tool aliases and `validate`'s report lines",
    "mcp/test_mcp_docs.py": _CLI,
    "mcp/test_mcp_gateway_core.py": "the gateway's SSE framing, and the bound on the "
    "tools the sessions' own lists keep",
    "mcp/test_mcp_hostile_frames.py": "the stdio gateway's line limit",
    "mcp/test_mcp_http_hostile.py": "the HTTP gateway's body and SSE event limits",
    "mcp/test_mcp_tool_kinds.py": "tool kinds from MCP annotations",
    "reliability/_secrets_agent.py": "the demo's scenario (no public API: `otelhooks demo`)",
    "reliability/test_command_processes.py": "command processes' reaper and signal rules",
    "reliability/test_config_errors.py": "config inspection",
    "reliability/test_data_at_rest.py": "the webhook outbox's file",
    "reliability/test_exit_flush.py": "the webhook outbox's file",
    "reliability/test_hostile_claude_route.py": "the Claude Code routes and received OTLP signals",
    "reliability/test_hostile_guards.py": "caps: command output, depth, matchers",
    "reliability/test_own_clients_no_proxy.py": "the exporter a coding agent's hook process "
    "builds from its OTEL_* settings",
    "reliability/test_webhook_faults.py": "the outbox, the control response limit",
    "replay/test_replay_equivalence.py": "replay's streaming reader against the whole-file one",
    "replay/test_replay_recorded_limit.py": "that serve's web serving and the bridges' span "
    "writer (private) make their providers' resource as configure() does",
    "stack/test_collector_fleet.py": "`serve`'s default port in the generated Collector config",
    "stack/test_live_prometheus.py": "the histograms' bucket boundaries",
    "test_batch_processor.py": "the delivery tracker's counts",
    "test_command_hooks.py": "the command action's output cap and block rules",
    "test_config_files.py": "handler import by dotted name",
    "test_config_formats.py": "format detection, parsing and config inspection",
    "test_docstring_examples.py": "examples leave the process inbox unserved",
    "test_eventlog_hooks.py": "which events become event-log entries",
    "test_eventlog_otlp.py": "the OTLP JSON encoder feeds the event log",
    "test_fingerprint.py": "the FNV-1a fingerprint and its canonical JSON",
    "test_first_hour_traps.py": "the starter hooks file",
    "test_hook_modes.py": "hook binding and event-log entries by mode",
    "test_hot_path.py": "the live event and fingerprint on the hot path",
    "test_matchers.py": "matcher kinds, RE2 and anchored prefixes",
    "test_observer_inline.py": "which observers run inline",
    "test_private_names.py": "the private names of CPython and the SDK still relied on, each "
    "held to what it does",
    "test_properties.py": "control-response parsing, delivery and matcher properties",
    "test_public_api.py": "the public modules cover every private model and name",
    "test_redact.py": "the secret registry, scrubbing and the caps around it",
    "test_registry_index.py": "the registry's index",
    "test_runtime.py": "the built-in scripted runtime",
    "test_script_plugin_hooks.py": "script and plugin actions",
    "test_waited_within.py": "the waited-within rule of calls",
    "test_webhook_config.py": "webhook header templates and config binding",
    "test_webhook_control.py": "the control-response limit",
    "test_webhook_notify.py": "the result limit and email cache of webhook bodies",
    "test_webhook_payload_content.py": "which webhook body fields are content",
    "test_webhook_queue.py": "the outbox and its backoff",
    "test_worker.py": "the bounded worker",
    "web/test_approvals.py": "approval hook binding",
    "web/test_index.py": "the web index's decision summary",
}  # fmt: skip


def _private(module: str) -> bool:
    return module.split(".")[0] == "otelhooks" and any(
        part.startswith("_") for part in module.split(".")
    )


def imports_private(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            if _private(node.module):
                return True
            if node.module.split(".")[0] == "otelhooks" and any(
                a.name.startswith("_") for a in node.names
            ):
                return True
        elif isinstance(node, ast.Import) and any(_private(a.name) for a in node.names):
            return True
    return False


# once for both tests below: parsing every test file costs about a second of CPU
@functools.cache
def importing_private() -> frozenset[str]:
    return frozenset(
        p.relative_to(TESTS).as_posix()
        for p in TESTS.rglob("*.py")
        # the npm CLIs installed beside their tests ship Python files of their own
        if "node_modules" not in p.parts and imports_private(p)
    )


def test_only_listed_test_files_import_private_modules() -> None:
    unlisted = sorted(importing_private() - set(ALLOWED))
    assert unlisted == [], (
        "import the public module, or list the file in ALLOWED with the private rule it tests"
    )


def test_every_listed_file_still_imports_a_private_module() -> None:
    assert sorted(set(ALLOWED) - importing_private()) == []
