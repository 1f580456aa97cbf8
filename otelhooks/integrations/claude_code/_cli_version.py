"""Whether the ``claude`` CLI install finds fires ``PreSkillShellCommand``.

Claude Code before 2.1.332 runs a skill's inline shell command (``!`cmd` `` in its ``SKILL.md``)
and fires no hook for it: the installed guards never see the command. ``install`` asks the
``claude`` on ``PATH`` (the one a user's shell runs) for its version and warns when it is older;
no ``claude`` there, nothing is said (install never needs the CLI).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from collections.abc import Mapping

__all__ = ["FIRST_SKILL_HOOK_VERSION", "skill_shell_warning"]

# the first Claude Code release that fires PreSkillShellCommand
FIRST_SKILL_HOOK_VERSION = (2, 1, 332)
_VERSION = re.compile(r"\b(\d+)\.(\d+)\.(\d+)\b")
_UNGUARDED = (
    "a skill's inline shell command (!`cmd` in its SKILL.md) runs without the guards seeing it "
    "(PreSkillShellCommand, the hook install writes for it, fires from Claude Code 2.1.332 on)"
)


def _ask(path: str, env: Mapping[str, str] | None, timeout_s: float) -> tuple[str, str | None]:
    """``claude --version``'s output, or why there is none. Run in its own session: a CLI that
    hangs (or a wrapper script's children) is killed whole at the deadline, and never holds
    install on a pipe."""
    try:
        proc = subprocess.Popen(
            [path, "--version"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=None if env is None else dict(env),
            start_new_session=True,
        )
    except OSError as exc:
        return "", f"it could not be run ({exc.strerror or exc})"
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            proc.kill()
        proc.communicate()
        return "", f"`{path} --version` gave no answer within {timeout_s:g} s"
    text = out.decode("utf-8", "replace")
    if proc.returncode != 0:
        return text, f"`{path} --version` failed (exit {proc.returncode})"
    return text, None


def skill_shell_warning(
    env: Mapping[str, str] | None = None, *, timeout_s: float = 10.0
) -> str | None:
    """The warning install prints when the ``claude`` on ``PATH`` (``env``'s, else this
    process's) is older than 2.1.332, or its version cannot be told; ``None`` when it is
    2.1.332 or later, or there is no ``claude`` on ``PATH``.

    Example:
        >>> skill_shell_warning({"PATH": "/nonexistent"}) is None
        True
    """
    path = shutil.which("claude", path=(env if env is not None else os.environ).get("PATH"))
    if path is None:
        return None
    text, problem = _ask(path, env, timeout_s)
    found = _VERSION.search(text)
    if problem is None and found is None:
        problem = f"`{path} --version` printed no version ({text.strip()[:80]!r})"
    if problem is not None or found is None:
        return (
            f"skill shell commands may be unguarded: {problem}; "
            f"on Claude Code before 2.1.332 {_UNGUARDED}"
        )
    version = tuple(int(part) for part in found.groups())
    if version >= FIRST_SKILL_HOOK_VERSION:
        return None
    return (
        f"skill shell commands are unguarded: {path} is Claude Code {found.group(0)}, where "
        f"{_UNGUARDED}; update Claude Code to 2.1.332 or later"
    )
