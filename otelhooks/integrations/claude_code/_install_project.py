"""What ``otelhooks claude-code install`` / ``uninstall`` do to a project (or the user's home):
which settings file each form goes to, the starter hook file, the traces folder. See
:mod:`._install` (the module doc says where and why); the CLI only prints what these return."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from otelhooks._config._claude_types import wrong_types
from otelhooks._private_files import private_folder
from otelhooks._starter import starter_hooks_yaml
from otelhooks.integrations.claude_code._entries import sudo_home_notes
from otelhooks.integrations.claude_code._install import (
    DEFAULT_HOOKS_FILE,
    DEFAULT_TRACES,
    SettingsChange,
    install,
    refuse_skipped,
    settings_path,
    uninstall,
)
from otelhooks.integrations.claude_code._settings_file import check_editable, read_regular

__all__ = ["ProjectChange", "install_project", "uninstall_project"]

# Claude Code has no variable that moves its managed-settings folder; this one moves where
# install looks (a test's folder, or a machine whose policy is deployed elsewhere)
_MANAGED_SETTINGS_DIR_ENV = "OTELHOOKS_CLAUDE_MANAGED_SETTINGS_DIR"


@dataclass
class ProjectChange:
    """What :func:`install_project` or :func:`uninstall_project` did, file by file.

    Attributes:
        changes: one :class:`~._install.SettingsChange` per settings file looked at (the one
            written last; before it, the other one of the project, ours taken out of it).
        hooks_file: the starter hook file considered (``None``: none, as with ``user``).
        hooks_file_verb: ``created`` or ``deleted`` when the starter file was, else
            ``unchanged``.
        traces: where the command form records spans (``None``: nowhere, or the ``http`` form).
    """

    changes: list[SettingsChange] = field(default_factory=list)
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

    The command form goes to the project's ``.claude/settings.local.json`` (it names this
    machine's Python; ours are taken out of the shared ``settings.json``), the ``http`` form to
    the shared ``.claude/settings.json`` (ours taken out of the local one), either to the
    user's (:func:`~._install.settings_path`) with ``user``. A relative ``hooks_file`` that
    does not exist is written as the starter hook file; a ``~`` traces folder is created
    ``0700``.

    Args:
        project: the project folder.
        user: the user's settings instead of the project's (and no starter hook file).
        http: the base URL of ``otelhooks serve``: ``http`` hooks instead of command hooks.
        hooks_file: the otelhooks hook file, relative to ``project`` or absolute (a project
            install writes it by full path, and a relative ``traces_out`` too).
        fail_closed: command form: a failing bridge denies instead of letting the call run.
        traces_out: command form: where the spans go (``None``: nowhere).

    Raises:
        ValueError: a settings file cannot be edited without loss (none was written).
        OSError: a file cannot be read or written (one may have been).

    Example:
        >>> result = install_project(project="p", traces_out=None)
        >>> [(c.path.as_posix(), c.verb) for c in result.changes]
        [('p/.claude/settings.json', 'unchanged'), ('p/.claude/settings.local.json', 'created')]
        >>> result.hooks_file.as_posix(), result.hooks_file_verb
        ('p/.claude/otelhooks.yaml', 'created')
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
        check_editable(target)  # a refusal of the second file must leave the first as it was
        refuse_skipped(target, (read_regular(target) or b"").decode("utf-8", "replace"))
        result.changes.append(uninstall(other))
    result.changes.append(
        install(
            target,
            http=http,
            hooks_file=hooks_file if user else _anchored(project, hooks_file),
            fail_closed=fail_closed,
            traces_out=traces if user or traces is None else _anchored(project, traces),
        )
    )
    # Claude Code's precedence: the project's local file, its shared file, the user's file
    result.changes[-1].warnings[:0] = _hooks_off_notes(
        target, [settings_path(user=True)] if user else [local, shared, settings_path(user=True)]
    )
    if user:
        result.changes[-1].warnings[:0] = sudo_home_notes(target, "Claude Code")
    elif http is not None and (Path(project) / ".git").exists():
        result.changes[-1].warnings.append(_SUBFOLDER_NOTE.format(target=target))
    if not user and not Path(hooks_file).is_absolute():
        starter = Path(project) / hooks_file
        result.hooks_file = starter
        if not starter.exists():
            starter.parent.mkdir(parents=True, exist_ok=True)
            with starter.open("x", encoding="utf-8") as handle:
                handle.write(starter_hooks_yaml(hooks_file))
            result.hooks_file_verb = "created"
    return result


# Claude Code 2.1.332 started in a subfolder of a git repository runs the hooks of the root's
# settings.local.json, not those of its settings.json (tests/claude_code_cli)
_SUBFOLDER_NOTE = (
    "Claude Code started in a subfolder of this repository runs none of the hooks of {target} "
    "(it reads the root's settings.local.json there, not its settings.json): the guards see no "
    "tool call of such a session; start Claude Code at the repository's root, or install the "
    "command form (settings.local.json)"
)


def _anchored(project: str | os.PathLike[str], path: str) -> str:
    """``path`` relative to ``project`` written absolute: the bridge reads a relative path under
    ``$CLAUDE_PROJECT_DIR``, the folder Claude Code started in, and Claude Code started in a
    subfolder of a git repository loads the settings of the repository's root: the hooks file
    was looked for in the subfolder, not found, and every tool ran unguarded. A user install
    keeps it relative (each project's own file); ``~`` the bridge expands itself."""
    if Path(path).expanduser().is_absolute() or path.startswith("~"):
        return path
    return str(Path(project).absolute() / path)


def _managed_settings_files() -> list[Path]:
    """Claude Code's managed-settings files on this machine, lowest precedence first:
    ``managed-settings.json``, then ``managed-settings.d/*.json`` by name (not hidden), each
    over the one before; in ``/etc/claude-code`` (Linux), ``/Library/Application
    Support/ClaudeCode`` (macOS), ``C:\\Program Files\\ClaudeCode`` (Windows), or the folder
    ``$OTELHOOKS_CLAUDE_MANAGED_SETTINGS_DIR`` names. Only those that exist."""
    folder = os.environ.get(_MANAGED_SETTINGS_DIR_ENV)
    if folder:
        base = Path(folder)
    elif sys.platform == "darwin":
        base = Path("/Library/Application Support/ClaudeCode")
    elif sys.platform == "win32":
        base = Path("C:/Program Files/ClaudeCode")
    else:
        base = Path("/etc/claude-code")
    drop_ins = base / "managed-settings.d"
    try:
        names = sorted(p.name for p in drop_ins.iterdir() if p.suffix == ".json")
    except OSError:
        names = []
    files = [base / "managed-settings.json", *(drop_ins / n for n in names if n[0] != ".")]
    return [path for path in files if path.is_file()]


def _settings(path: Path) -> dict[str, object]:
    """The settings of ``path`` as Claude Code reads them: none from a file it ignores whole (a
    known setting of the wrong type, which install refuses to write into), whose
    ``disableAllHooks`` turns nothing off, nor on."""
    raw = read_regular(path)  # a named pipe would hold install forever
    try:
        data = json.loads(raw) if raw is not None else {}
    except ValueError:
        return {}  # one install refuses on its own when it is the target
    return data if isinstance(data, dict) and not wrong_types(data) else {}


def _hooks_off_notes(target: Path, files: list[Path]) -> list[str]:
    """Why Claude Code would run none of the hooks install wrote to ``target``: a managed
    setting (it overrides every other file, and only an administrator changes it), else
    ``disableAllHooks: true`` in the first of ``files`` (highest precedence first) that sets
    the key."""
    managed: dict[str, tuple[Path, object]] = {}  # a later managed file overrides an earlier
    for path in _managed_settings_files():
        managed.update((key, (path, value)) for key, value in _settings(path).items())
    admin = "managed settings: an administrator's, over every user, project and local file"
    path, value = managed.get("disableAllHooks", (target, None))
    if value is True:
        return [
            f"no installed hook will run: {path} ({admin}) sets `disableAllHooks: true`, so "
            "Claude Code runs no hook at all, managed ones included, and the guards never see a "
            "tool call; only an administrator can lift it"
        ]
    path, only = managed.get("allowManagedHooksOnly", (target, None))
    key = "`allowManagedHooksOnly: true`"
    if only is not True:
        path, strict = managed.get("strictPluginOnlyCustomization", (target, None))
        key = "`strictPluginOnlyCustomization` (hooks locked)"
        only = strict is True or (isinstance(strict, list) and "hooks" in strict)
    if only is True:
        return [
            f"no installed hook will run: {path} ({admin}) sets {key}, so Claude Code runs only "
            f"hooks from managed settings and ignores those in {target}; the guards never see a "
            "tool call until an administrator adds the otelhooks hooks (the entries written to "
            f"{target}) to the managed settings' `hooks`"
        ]
    if isinstance(value, bool):
        return []  # managed `disableAllHooks: false` overrides every other file
    for path in files:
        value = _settings(path).get("disableAllHooks")
        if isinstance(value, bool):
            if not value:
                return []
            return [
                f"no installed hook will run: {path} sets `disableAllHooks: true`, so Claude "
                "Code runs no hook at all and the guards never see a tool call; remove it (or "
                f"set `disableAllHooks: false` in {target})"
            ]
    return []


def uninstall_project(
    *,
    project: str | os.PathLike[str] = ".",
    user: bool = False,
    hooks_file: str = DEFAULT_HOOKS_FILE,
) -> ProjectChange:
    """Remove ours from every settings file install may have written; the starter hook file
    too, when it is still exactly the starter (an edited one is the user's).

    Raises:
        ValueError: a settings file cannot be edited without loss (none was written).
        OSError: a file cannot be read or written (one may have been).

    Example:
        >>> _ = install_project(project="p", traces_out=None)
        >>> result = uninstall_project(project="p")
        >>> [c.verb for c in result.changes], result.hooks_file_verb
        (['unchanged', 'deleted'], 'deleted')
    """
    result = ProjectChange()
    if user:
        result.changes.append(uninstall(settings_path(user=True)))
        return result
    files = [settings_path(project=project, local=local) for local in (False, True)]
    check_editable(files[1])  # a refusal of the second file must leave the first as it was
    for path in files:
        result.changes.append(uninstall(path))
    starter = Path(project) / hooks_file
    try:
        if starter.read_text(encoding="utf-8") == starter_hooks_yaml(hooks_file):
            starter.unlink()
            result.hooks_file, result.hooks_file_verb = starter, "deleted"
    except (OSError, UnicodeDecodeError):
        pass
    return result
