"""An ``ApplyPatchTool`` whose file operations go through otelhooks' tool hooks: its ``editor``
is wrapped (:func:`hook_apply_patch`), one ``execute_tool`` call per file operation (matcher value
``apply_patch``, kinds ``@file_edit`` and ``@file_write``), its arguments the operation's ``type``,
``path``, ``diff`` and ``move_to``."""

from __future__ import annotations

import dataclasses
from typing import Any

from agents import ApplyPatchEditor, ApplyPatchOperation, ApplyPatchResult, ApplyPatchTool

from otelhooks.integrations.openai_agents._guard import awaited, guarded
from otelhooks.integrations.openai_agents._rewrites import approval_refuses

__all__ = ["hook_apply_patch"]


def _patch_text(output: Any) -> Any:
    """What the model is shown of an editor's result: its ``output``."""
    if isinstance(output, ApplyPatchResult):
        return output.output or ""
    return "" if output is None else output


class _HookedEditor:
    """An ``ApplyPatchEditor`` whose file operations go through otelhooks' tool hooks."""

    def __init__(
        self, editor: ApplyPatchEditor, name: str, identifier: str | None, approved: bool
    ) -> None:
        self.editor = editor
        self.name = name
        self.identifier = identifier
        # the tool's needs_approval is set: its policy takes a call id an editor is not given,
        # so it cannot be asked about a rewrite, which a person never saw, and refuses all
        self.approved = approved

    async def _apply(self, operation: ApplyPatchOperation) -> ApplyPatchResult | str | None:
        args: dict[str, Any] = {
            "type": operation.type,
            "path": operation.path,
            "diff": operation.diff,
            "move_to": operation.move_to,
        }

        async def run(changed: dict[str, Any] | None) -> Any:
            op = operation
            if changed is not None:
                op = dataclasses.replace(
                    operation,
                    type=changed["type"],
                    path=str(changed["path"]),
                    diff=changed.get("diff"),
                    move_to=changed.get("move_to"),
                )
                await approval_refuses(self.name, self.approved, op.ctx_wrapper, op, "")
            if op.type not in ("create_file", "update_file", "delete_file"):
                raise ValueError(f"unknown apply_patch operation {op.type!r}")
            return await awaited(getattr(self.editor, op.type)(op))

        # the operation does not carry the model's call id; the span gets one of its own
        output, denied = await guarded(self.name, self.identifier, args, None, run, _patch_text)
        if denied:
            return ApplyPatchResult(status="failed", output=str(output))
        return output if isinstance(output, ApplyPatchResult | None) else str(output)

    async def create_file(self, operation: ApplyPatchOperation) -> ApplyPatchResult | str | None:
        return await self._apply(operation)

    async def update_file(self, operation: ApplyPatchOperation) -> ApplyPatchResult | str | None:
        return await self._apply(operation)

    async def delete_file(self, operation: ApplyPatchOperation) -> ApplyPatchResult | str | None:
        return await self._apply(operation)


def hook_apply_patch(tool: ApplyPatchTool, identifier: str | None) -> ApplyPatchTool:
    """A copy of ``tool`` whose editor's operations go through the hooks (``tool`` itself when
    its editor is hooked already)."""
    if isinstance(tool.editor, _HookedEditor):
        return tool
    editor = _HookedEditor(tool.editor, tool.name, identifier, tool.needs_approval is not False)
    return dataclasses.replace(tool, editor=editor)
