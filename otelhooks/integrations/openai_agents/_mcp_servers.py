"""The MCP servers of a hooked agent: each ``call_tool`` goes through otelhooks' tool hooks
(:func:`~otelhooks.integrations.openai_agents._guard.guarded`, identifier the server's name, so
``{server}/{tool}`` and ``mcp__{server}__{tool}`` match it, as in the MCP gateway); everything
else is the user's server's."""

from __future__ import annotations

from typing import Any

from agents.agent import AgentBase
from agents.mcp import MCPServer
from agents.run_context import RunContextWrapper
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
from otelhooks._tool_schema import rewritten, type_problem, with_defaults
from otelhooks.integrations.openai_agents._guard import guarded
from otelhooks.mcp._listing import MAX_LISTED

__all__ = ["HookedMCPServer"]


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

    async def call_tool(
        self, tool_name: str, arguments: dict[str, Any] | None, meta: dict[str, Any] | None = None
    ) -> CallToolResult:
        async def run(changed: dict[str, Any] | None) -> Any:
            sent = None if changed is None else rewritten(changed, arguments or {}, schema)
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
        try:
            # the SDK does not pass the model's call id to a server; the span gets one of its own
            output, denied = await guarded(
                tool_name, self.server.name, args, None, run, _mcp_text, attributes, problem
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
        return self.server._get_needs_approval_for_tool(tool, agent)

    def _get_failure_error_function(self, agent_failure_error_function: Any) -> Any:
        return self.server._get_failure_error_function(agent_failure_error_function)
