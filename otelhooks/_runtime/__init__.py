"""A small reference agent runtime, instrumented with otelhooks (used by the demo and tests)."""

from otelhooks._runtime._agent import AgentResult, AgentSpec, Approver, exec_agent
from otelhooks._runtime._model import Model, ModelReply, ScriptedModel, ToolRequest
from otelhooks._runtime._tools import Tool, calculator_tools, failing_tool, file_tools

__all__ = [
    "AgentResult",
    "AgentSpec",
    "Approver",
    "Model",
    "ModelReply",
    "ScriptedModel",
    "Tool",
    "ToolRequest",
    "calculator_tools",
    "exec_agent",
    "failing_tool",
    "file_tools",
]
