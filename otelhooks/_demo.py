"""``otelhooks demo``: a complete agent run through every lifecycle event, hooks firing.

The demo's policy (its intercept hooks) is the file ``demo-hooks.yaml`` beside this module,
which a user can read and replay the demo's spans against; its observers only count.
Four operations with the reference runtime and a scripted model:

* ``research-assistant`` completes: its input is rewritten by a ``before_agent_start``
  interceptor, a web search is mocked, a shell command denied, a tool raises, a file's secret is
  redacted by ``tool_result_persist``, a deletion is approved, the context is compacted, an
  in-process and an isolated sub-agent run, a sub-agent fails, and the answer is rewritten by a
  ``message_sending`` interceptor;
* ``ops-bot`` is stopped by a rejected approval;
* ``brittle-bot`` fails: its compaction errors, then its model raises;
* ``looping-bot`` passes its budget threshold and hits the cost limit.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from otelhooks._config import load_config
from otelhooks._demo_hooks import demo_hooks_file
from otelhooks._events import HookEvent
from otelhooks._hooks import Hook
from otelhooks._pipeline import OtelHooks
from otelhooks._runtime import (
    AgentSpec,
    ModelReply,
    ScriptedModel,
    ToolRequest,
    calculator_tools,
    exec_agent,
    failing_tool,
    file_tools,
)

__all__ = ["INTERCEPT_OF", "LOBEHUB_TYPES", "DemoReport", "policy_hooks", "run_demo", "tally_hooks"]

LOBEHUB_TYPES = (
    "beforeStep", "afterStep", "onComplete", "onError",
    "beforeToolCall", "afterToolCall", "onToolCallError",
    "beforeHumanIntervention", "afterHumanIntervention", "onStopByHumanIntervention",
    "beforeCompact", "afterCompact", "onCompactError",
    "beforeCallAgent", "afterCallAgent", "onCallAgentError",
)  # fmt: skip
KERNEL_INTERCEPTS = (
    "before_agent_start",
    "message_sending",
    "before_tool_call",
    "tool_result_persist",
)


# The demo-hooks.yaml hooks, by the intercept point each one serves.
INTERCEPT_OF = {
    "offline-web": "before_tool_call",
    "no-shell": "before_tool_call",
    "add-context": "before_agent_start",
    "redact-secrets": "tool_result_persist",
    "sign-messages": "message_sending",
}


class DemoReport:
    """What fired during the demo: hook invocations by hook type, and intercept decisions."""

    def __init__(self) -> None:
        self.fired: Counter[str] = Counter()
        self.intercepts: Counter[str] = Counter()

    def tally(self, hook_type: str) -> Callable[[HookEvent], None]:
        def record(event: HookEvent) -> None:
            self.fired[hook_type] += 1

        return record

    def counted(self, point: str, handler: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """``handler``, counting each call at its intercept ``point``."""

        def call(event: Any) -> Any:
            self.intercepts[point] += 1
            return handler(event)

        return call


def tally_hooks(report: DemoReport) -> list[dict[str, Any]]:
    """One hook per LobeHub hook type that only counts (its ``None`` changes nothing)."""
    return [
        {"id": f"log-{hook_type}", "type": hook_type, "handler": report.tally(hook_type)}
        for hook_type in LOBEHUB_TYPES
    ]


def policy_hooks(report: DemoReport) -> list[Hook | dict[str, Any]]:
    """The intercept hooks of ``demo-hooks.yaml``, each of the demo's own counted as it runs."""
    hooks: list[Hook | dict[str, Any]] = []
    for hook in load_config(demo_hooks_file()).hooks:
        point = INTERCEPT_OF.get(hook.id)
        if hook.handler is None or point is None:
            hooks.append(hook)  # one added to the file: it runs as written, uncounted
            continue
        fields = {name: getattr(hook, name) for name in hook.model_fields_set}
        hooks.append({**fields, "handler": report.counted(point, hook.handler)})
    return hooks


def _fill_workspace(root: Path) -> Path:
    (root / "notes.md").write_text("# Notes\nTrace every tool call.\napi_token = sk-demo-123\n")
    (root / "old.log").write_text("stale log\n")
    (root / "big.log").write_text("event line\n" * 600)
    return root


def _t(identifier: str, api: str, **args: Any) -> ToolRequest:
    return ToolRequest(identifier, api, args)


# The demo's scripted models answer as gpt-4o-mini would be priced (genai-prices, the cost
# extra): the tree and the summary show dollars.
PRICED: dict[str, Any] = {"model_name": "gpt-4o-mini", "provider": "openai"}


def _specs(root: Path) -> dict[str, AgentSpec]:
    tools = [*file_tools(root), *calculator_tools(), failing_tool()]
    summarizer = AgentSpec(
        "summarizer", ScriptedModel([ModelReply("Summary: traces explain runs.")]), **PRICED
    )
    translator = AgentSpec(
        "translator", ScriptedModel([ModelReply("Resumen: las trazas ayudan.")]), **PRICED
    )
    flaky = AgentSpec(
        "flaky-agent", ScriptedModel([], error=TimeoutError("model endpoint timed out")), **PRICED
    )
    long_text = "word " * 400
    research = AgentSpec(
        "research-assistant",
        ScriptedModel(
            [
                ModelReply(
                    "Let me look around.",
                    (
                        _t("fs", "readFile", path="notes.md"),
                        _t("web", "search", query="otel genai semconv"),
                        _t("shell", "exec", cmd="rm -rf /tmp/x"),
                        _t("calc", "evaluate", expression="(3 + 4) * 6"),
                        _t("flaky", "explode"),
                    ),
                ),
                ModelReply(long_text, (_t("fs", "deleteFile", path="old.log"),)),
                ModelReply(
                    "Asking helpers.",
                    (
                        _t("agents", "call", agent="summarizer", instruction="summarize notes"),
                        _t(
                            "agents",
                            "call",
                            agent="translator",
                            instruction="translate",
                            isolated=True,
                        ),
                        _t("agents", "call", agent="flaky-agent", instruction="try your best"),
                    ),
                ),
                ModelReply("Done: notes read, 42 computed, log cleaned, summaries gathered."),
            ]
        ),
        tools=tools,
        token_budget=300,
        subagents={"summarizer": summarizer, "translator": translator, "flaky-agent": flaky},
        **PRICED,
    )
    ops = AgentSpec(
        "ops-bot",
        ScriptedModel([ModelReply("Cleaning up.", (_t("fs", "deleteFile", path="notes.md"),))]),
        tools=tools,
        approver=lambda request: "never delete notes",
        **PRICED,
    )
    brittle = AgentSpec(
        "brittle-bot",
        ScriptedModel(
            [ModelReply("reading", (_t("fs", "readFile", path="big.log"),))],
            error=RuntimeError("model returned malformed JSON"),
        ),
        tools=tools,
        token_budget=200,
        **PRICED,
    )
    looping = AgentSpec(
        "looping-bot",
        ScriptedModel(
            [ModelReply("again", (_t("calc", "evaluate", expression="2**10"),), 900, 100)]
        ),
        tools=tools,
        # gpt-4o-mini's price for its 1,000 tokens a step is $0.000195: the threshold (80 %)
        # passes in step 4, the limit in step 5; the estimate matches without genai-prices
        cost_limit=0.0009,
        price_per_1k_tokens=0.000195,
        **PRICED,
    )
    return {s.name: s for s in (research, ops, brittle, looping)}


def run_demo(oh: OtelHooks, *, extra_hooks: Sequence[Hook] = ()) -> DemoReport:
    """Run the four demo operations on ``oh`` and return what fired."""
    report = DemoReport()
    # The counters see every event; then the user's hooks, so that a deny or a mock of theirs
    # decides before the demo's own policy.
    oh.register(tally_hooks(report))
    oh.register(extra_hooks)
    oh.register(policy_hooks(report))
    step_log: list[int] = []
    # the file tools work in a folder of their own, removed with everything in it afterwards
    with tempfile.TemporaryDirectory(prefix="otelhooks-demo-") as folder:
        root = _fill_workspace(Path(folder))
        specs = _specs(root)
        tracer = oh.tracer
        tracer.emit("gateway_start", port=0, host="127.0.0.1")
        tracer.emit("session_start", sessionKey="demo-session", agentId="research-assistant")
        per_operation = [
            {
                "id": "count-steps",
                "type": "afterStep",
                "handler": lambda e: step_log.append(e.stepIndex),
            }
        ]
        tracer.emit(
            "message_received",
            sessionKey="demo-session",
            content="Research tracing.",
            channelId="chat",
        )
        exec_agent(
            tracer,
            specs["research-assistant"],
            "Research how to trace agent tool calls.",
            hooks=per_operation,
            session_id="demo-session",
            user_id="user-1",
        )
        exec_agent(tracer, specs["ops-bot"], "Tidy the workspace.", session_id="demo-session")
        exec_agent(tracer, specs["brittle-bot"], "Compute a quarter.", session_id="demo-session")
        exec_agent(tracer, specs["looping-bot"], "Keep computing.", session_id="demo-session")
        tracer.emit(
            "session_end", sessionKey="demo-session", reason="demo finished", messageCount=4
        )
        tracer.emit("gateway_stop", reason="demo finished")
    oh.force_flush()
    report.fired["perOperation:afterStep"] = len(step_log)
    return report


def missing_events(report: DemoReport) -> list[str]:
    """LobeHub types and kernel intercept points that did not fire (empty for a whole demo)."""
    missing = [t for t in LOBEHUB_TYPES if report.fired[t] == 0]
    # before_tool_call is beforeToolCall, counted above: a user's hook (run first) may decide
    # every tool call before the demo's own intercept hooks see one.
    return missing + [
        k for k in KERNEL_INTERCEPTS if k != "before_tool_call" and report.intercepts[k] == 0
    ]
