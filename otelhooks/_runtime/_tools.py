"""Real tools for the reference runtime: files under a directory, a calculator, one that fails."""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Tool", "calculator_tools", "failing_tool", "file_tools"]


@dataclass(frozen=True, slots=True)
class Tool:
    """A tool the agent can call as ``identifier/api_name``.

    Attributes:
        requires_approval: a person must approve each call (``request_human_approve``).
    """

    identifier: str
    api_name: str
    fn: Callable[..., Any]
    description: str = ""
    requires_approval: bool = False

    @property
    def key(self) -> str:
        return f"{self.identifier}/{self.api_name}"


def file_tools(root: str | Path) -> list[Tool]:
    """``fs/readFile``, ``fs/listDir``, ``fs/deleteFile`` (needs approval), kept inside ``root``."""
    base = Path(root).resolve()

    def inside(path: str) -> Path:
        target = (base / path).resolve()
        if not target.is_relative_to(base):
            raise PermissionError(f"{path!r} is outside the workspace")
        return target

    def read_file(path: str) -> str:
        return inside(path).read_text(encoding="utf-8")

    def list_dir(path: str = ".") -> str:
        return "\n".join(sorted(p.name for p in inside(path).iterdir()))

    def delete_file(path: str) -> str:
        inside(path).unlink()
        return f"deleted {path}"

    return [
        Tool("fs", "readFile", read_file, "Read a UTF-8 file under the workspace."),
        Tool("fs", "listDir", list_dir, "List a directory under the workspace."),
        Tool("fs", "deleteFile", delete_file, "Delete a file.", requires_approval=True),
    ]


_OPS: dict[type, Callable[..., Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


def _evaluate(node: ast.AST) -> Any:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        if isinstance(node.op, ast.Pow) and abs(_evaluate(node.right)) > 100:
            raise ValueError("exponent too large")
        return _OPS[type(node.op)](_evaluate(node.left), _evaluate(node.right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_evaluate(node.operand))
    raise ValueError(f"unsupported expression element: {type(node).__name__}")


def calculator_tools() -> list[Tool]:
    """``calc/evaluate``: arithmetic on numbers (parsed with ``ast``, never ``eval``)."""

    def evaluate(expression: str) -> str:
        return str(_evaluate(ast.parse(expression, mode="eval")))

    return [Tool("calc", "evaluate", evaluate, "Evaluate an arithmetic expression.")]


def failing_tool() -> Tool:
    """``flaky/explode``: always raises, to show tool errors."""

    def explode(**_: Any) -> str:
        raise ConnectionError("upstream service unavailable")

    return Tool("flaky", "explode", explode, "A tool that always fails.")
