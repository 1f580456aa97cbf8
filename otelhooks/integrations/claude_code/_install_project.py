"""What ``otelhooks claude-code install`` / ``uninstall`` do to a project (or the user's home):
which settings file each form goes to, the starter hook file, the traces folder. See
:mod:`._install` (the module doc says where and why)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from otelhooks._private_files import private_folder
from otelhooks._starter import starter_hooks_yaml
from otelhooks.integrations.claude_code._install import (
    DEFAULT_HOOKS_FILE,
    DEFAULT_TRACES,
    Change,
    install,
    settings_path,
    uninstall,
)

__all__ = ["ProjectChange", "install_project", "uninstall_project"]


@dataclass
class ProjectChange:
    """What :func:`install_project` or :func:`uninstall_project` did, file by file."""

    changes: list[Change] = field(default_factory=list)
    hooks_file: Path | None = None
    hooks_file_verb: str = "unchanged"
    traces: str | None = None


def install_project(
    *,
    project: str | os.PathLike[str] = ".",
    user: bool = False,
    http: str | None = None,
    hooks_file: str = DEFAULT_HOOKS_FILE,
    fail_closed: bool = False,
    traces_out: str | None = DEFAULT_TRACES,
) -> ProjectChange:
    """Install where the form belongs (see the module doc), a starter hook file if none.

    Raises:
        ValueError: a settings file cannot be edited without loss (none was written).
        OSError: a file cannot be read or written.
    """
    result = ProjectChange()
    traces = traces_out if http is None else None
    if traces and traces.startswith("~"):
        private_folder(Path(traces).expanduser().parent)
    result.traces = traces
    if user:
        target, other = settings_path(user=True), None
    else:
        shared = settings_path(project=project)
        local = settings_path(project=project, local=True)
        # the command form names this machine's interpreter: never in the shared file
        target, other = (shared, local) if http is not None else (local, shared)
    if other is not None:
        result.changes.append(uninstall(other))
    result.changes.append(
        install(
            target, http=http, hooks_file=hooks_file, fail_closed=fail_closed, traces_out=traces
        )
    )
    if not user and not Path(hooks_file).is_absolute():
        starter = Path(project) / hooks_file
        result.hooks_file = starter
        if not starter.exists():
            starter.parent.mkdir(parents=True, exist_ok=True)
            with starter.open("x", encoding="utf-8") as handle:
                handle.write(starter_hooks_yaml(hooks_file))
            result.hooks_file_verb = "created"
    return result


def uninstall_project(
    *,
    project: str | os.PathLike[str] = ".",
    user: bool = False,
    hooks_file: str = DEFAULT_HOOKS_FILE,
) -> ProjectChange:
    """Remove ours from every settings file install may have written; the starter hook file
    too, when it is still exactly the starter (an edited one is the user's)."""
    result = ProjectChange()
    if user:
        result.changes.append(uninstall(settings_path(user=True)))
        return result
    for local in (False, True):
        result.changes.append(uninstall(settings_path(project=project, local=local)))
    starter = Path(project) / hooks_file
    try:
        if starter.read_text(encoding="utf-8") == starter_hooks_yaml(hooks_file):
            starter.unlink()
            result.hooks_file, result.hooks_file_verb = starter, "deleted"
    except (OSError, UnicodeDecodeError):
        pass
    return result
