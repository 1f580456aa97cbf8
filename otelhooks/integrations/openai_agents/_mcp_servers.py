"""The MCP servers of a hooked agent: each ``call_tool`` goes through otelhooks' tool hooks
(:func:`~otelhooks.integrations.openai_agents._guard.guarded`, identifier the server's name, so
``{server}/{tool}`` and ``mcp__{server}__{tool}`` match it, as in the MCP gateway); everything
else is the user's server's.

Arguments a hook rewrote meet the checks the SDK made on the model's before the hooks ran
(:mod:`~otelhooks.integrations.openai_agents._rewrites`): the server's ``tool_input_guardrails``
judge them again, and a rewrite of a call the server's ``require_approval`` has a person approve
is refused, as for a function tool.

A tool is named by its server's own name for it everywhere (hook matchers, spans,
``on_tool_call_denied``, the approval and guardrail events): with the agent's
``mcp_config={"include_server_in_tool_names": True}`` the SDK gives the model
``mcp_{server}__{tool}`` instead, and a record a guardrail or a person's rejection makes of such a
call is named back (:meth:`HookedMCPServer.tool_named`), as a hook matched it.
"""

from __future__ import annotations

import json
from contextvars import ContextVar
from typing import Any

from agents import ToolInputGuardrail, ToolOutputGuardrail
from agents.agent import AgentBase
from agents.mcp import MCPServer, MCPToolMetaContext, MCPToolMetaResolver
from agents.run_context import RunContextWrapper
from agents.tool_context import ToolContext
from mcp.types import (
    CallToolResult,
    GetPromptResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ReadResourceResult,
    TextContent,
)
from mcp.types import Tool as MCPTool

from otelhooks import _semconv as sc
from otelhooks._agents_mcp_names import safe_part
from otelhooks._tool_schema import rewritten, type_problem, with_defaults
from otelhooks.integrations.openai_agents._guard import RewriteRefusedError, guarded
from otelhooks.integrations.openai_agents._rewrites import (
    approval_refuses,
    judged_again,
    watch_guardrail,
    watch_output_guardrail,
)
from otelhooks.mcp._listing import MAX_LISTED

__all__ = ["HookedMCPServer"]

# The MCP tool call the SDK is making in this task: its tool name, arguments and ToolContext,
# told by the server's meta resolver, which the SDK calls (in the calling task, with the call's
# context) right before it gives the server only the name and arguments. The task the SDK then
# runs call_tool in inherits it.
_Calling = tuple[str, dict[str, Any] | None, RunContextWrapper[Any]]
_CALLING: ContextVar[_Calling | None] = ContextVar("otelhooks_mcp_calling", default=None)


class _MCPToolError(Exception):
    """An MCP tool's result flagged ``is_error``: the call failed (the model still gets it)."""

    def __init__(self, result: CallToolResult) -> None:
        super().__init__(_mcp_text(result) or "the MCP tool reported an error")
        self.result = result


def _mcp_text(result: Any) -> Any:
    """What an MCP tool result says: its text blocks (any other block as JSON)."""
    if not isinstance(result, CallToolResult):
        return result
    return "\n".join(
        b.text if isinstance(b, TextContent) else b.model_dump_json() for b in result.content
    )


def _mcp_answer(text: Any, *, error: bool) -> CallToolResult:
    """A tool result otelhooks answers with (a denial, a mock, a filtered result), as the MCP
    gateway writes it."""
    return CallToolResult(content=[TextContent(type="text", text=str(text))], is_error=error)


class HookedMCPServer(MCPServer):
    """An agent's MCP server whose tool calls go through otelhooks' tool hooks.

    Everything else is the user's server's: its lifecycle, listings, prompts and resources, and
    every setting the SDK reads from a server (approval policy, failure handler, guardrails,
    structured content, meta resolver). ``MCPServer.__init__`` is deliberately not called: an
    attribute it would have set here is read from the user's server instead (``__getattr__``).
    """

    def __init__(self, server: MCPServer) -> None:
        self.server = server
        # each listed tool's inputSchema (names the server listed, bounded as in the gateway)
        self._schemas: dict[str, Any] = {}
        # each tool's needs_approval, as the SDK got it from the server for its function tool
        self._approvals: dict[str, Any] = {}
        # the name the model called each tool by, when the SDK prefixed it: the tool's own
        self._called: dict[str, str] = {}
        self.tool_meta_resolver: MCPToolMetaResolver | None = self._resolve_meta
        # the SDK runs these before the hooks: a call one rejects never reaches them, and each
        # rejection is reported to the run (your server's own judge a hook's rewrite again)
        guardrails = getattr(server, "tool_input_guardrails", None)
        self.tool_input_guardrails: list[ToolInputGuardrail[Any]] | None = (
            None
            if guardrails is None
            else [
                watch_guardrail(g, identifier=server.name, named=self.tool_named)
                for g in guardrails
            ]
        )
        # these run after the call: one that withholds a result from the model is recorded
        outputs = getattr(server, "tool_output_guardrails", None)
        self.tool_output_guardrails: list[ToolOutputGuardrail[Any]] | None = (
            None
            if outputs is None
            else [watch_output_guardrail(g, server.name, self.tool_named) for g in outputs]
        )

    def __getattr__(self, name: str) -> Any:
        # only reached for what this class does not define: the user's server's attributes
        if name == "server":  # not set yet (a copy being made): never recurse
            raise AttributeError(name)
        return getattr(self.server, name)

    @property
    def name(self) -> str:
        return self.server.name

    @property
    def cached_tools(self) -> list[MCPTool] | None:
        return self.server.cached_tools

    async def connect(self) -> None:
        await self.server.connect()  # type: ignore[no-untyped-call]

    async def cleanup(self) -> None:
        await self.server.cleanup()  # type: ignore[no-untyped-call]

    async def __aenter__(self) -> HookedMCPServer:
        await self.server.connect()  # type: ignore[no-untyped-call]
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.server.cleanup()  # type: ignore[no-untyped-call]

    async def list_tools(
        self, run_context: RunContextWrapper[Any] | None = None, agent: AgentBase | None = None
    ) -> list[MCPTool]:
        tools = await self.server.list_tools(run_context, agent)
        for tool in tools:
            if tool.name in self._schemas or len(self._schemas) < MAX_LISTED:
                self._schemas[tool.name] = tool.input_schema
        return tools

    def tool_named(self, called: str) -> str:
        """The server's own name for the tool the model called ``called``: the SDK names it
        ``mcp_{server}__{tool}`` under ``include_server_in_tool_names`` (a name it shortened
        with a hash, past 64 characters, is known once a call of it reached the server; until
        then it stays the model's)."""
        if called in self._schemas or not called.startswith("mcp_"):
            return called
        if called in self._called:
            return self._called[called]
        # the longest listed name the SDK's prefix ends with (a server named "a__b" has "c" and
        # "b__c" end alike)
        found = [t for t in self._schemas if called.endswith(f"__{safe_part(t)}")]
        return max(found, key=len) if found else called

    def _resolve_meta(self, context: MCPToolMetaContext) -> Any:
        """The ``tool_meta_resolver`` the SDK calls: the user's server's (its answer unchanged),
        first telling :meth:`call_tool` the context of the call it resolves for."""
        _CALLING.set((context.tool_name, context.arguments, context.run_context))
        yours = getattr(self.server, "tool_meta_resolver", None)
        return None if yours is None else yours(context)

    async def _judge_rewrite(
        self, tool_name: str, ctx: RunContextWrapper[Any] | None, sent: dict[str, Any]
    ) -> None:
        """Refuse (:class:`RewriteRefusedError`) a rewrite the server's guardrails reject or
        that changes a call a person approved; a check that cannot be made refuses it."""
        guardrails = getattr(self.server, "tool_input_guardrails", None)
        if guardrails:
            if not isinstance(ctx, ToolContext):
                raise RewriteRefusedError(
                    f"MCP tool {tool_name!r}: the server's tool input guardrails could not judge "
                    "the arguments a hook rewrote (the SDK did not say which call this is): the "
                    "call was denied",
                    "otelhooks",
                )
            await judged_again(guardrails, ctx, json.dumps(sent))
        # unknown (the SDK never asked this server): as if it asks a person, refused
        setting = self._approvals.get(tool_name, True)
        call_id = ctx.tool_call_id if isinstance(ctx, ToolContext) else ""
        await approval_refuses(tool_name, setting, ctx, sent, call_id)

    async def call_tool(
        self, tool_name: str, arguments: dict[str, Any] | None, meta: dict[str, Any] | None = None
    ) -> CallToolResult:
        calling = _CALLING.get()
        ctx = None
        if calling is not None and calling[0] == tool_name and calling[1] == arguments:
            ctx = calling[2]
            called = ctx.tool_name if isinstance(ctx, ToolContext) else tool_name
            if called != tool_name and (called in self._called or len(self._called) < MAX_LISTED):
                self._called[called] = tool_name

        async def run(changed: dict[str, Any] | None) -> Any:
            sent = None if changed is None else rewritten(changed, arguments or {}, schema)
            if sent is not None:
                await self._judge_rewrite(tool_name, ctx, sent)
            result = await self.server.call_tool(
                tool_name, arguments if sent is None else sent, meta
            )
            if result.is_error:
                raise _MCPToolError(result)
            return result

        # the guards judge what the server will run (the MCP gateway's rule, _tool_schema.py):
        # a value the server would read as another is refused (denied by otelhooks, no hook
        # run), its defaults are filled in
        schema = self._schemas.get(tool_name)
        problem = type_problem(arguments, schema)
        args = with_defaults(dict(arguments or {}), schema)
        attributes = {sc.MCP_METHOD_NAME: "tools/call", sc.MCP_SERVER_NAME: self.server.name}
        # the model's call id, from the call's context (else the span gets one of its own)
        call_id = ctx.tool_call_id if isinstance(ctx, ToolContext) else None
        try:
            output, denied = await guarded(
                tool_name, self.server.name, args, call_id, run, _mcp_text, attributes, problem
            )
        except _MCPToolError as failed:
            return failed.result
        if isinstance(output, CallToolResult):
            return output
        return _mcp_answer(output, error=denied)

    async def list_prompts(self) -> ListPromptsResult:
        return await self.server.list_prompts()

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None
    ) -> GetPromptResult:
        return await self.server.get_prompt(name, arguments)

    async def list_resources(self, cursor: str | None = None) -> ListResourcesResult:
        return await self.server.list_resources(cursor)

    async def list_resource_templates(
        self, cursor: str | None = None
    ) -> ListResourceTemplatesResult:
        return await self.server.list_resource_templates(cursor)

    async def read_resource(self, uri: str) -> ReadResourceResult:
        return await self.server.read_resource(uri)

    # The SDK asks the server itself for these two when it turns its tools into function tools:
    # the user's approval policy and failure handler, never the defaults of this wrapper. They
    # stay underscore forwards because no public way exists: MCPServer keeps both settings only
    # in attributes of its own (require_approval normalized, the failure handler possibly
    # unset), so MCPServer.__init__ cannot be given them from public fields, and the SDK's
    # MCPUtil calls these two methods on whatever server object the agent lists (a server class
    # of the user's may override them, which a forward keeps).
    def _get_needs_approval_for_tool(self, tool: MCPTool, agent: AgentBase | None) -> Any:
        setting = self.server._get_needs_approval_for_tool(tool, agent)
        if tool.name in self._approvals or len(self._approvals) < MAX_LISTED:
            self._approvals[tool.name] = setting  # what a rewrite of its calls is judged by
        return setting

    def _get_failure_error_function(self, agent_failure_error_function: Any) -> Any:
        return self.server._get_failure_error_function(agent_failure_error_function)
