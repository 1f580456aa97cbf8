"""Why Codex CLI or Gemini CLI would run none of the hooks ``install`` writes, and what Codex
needs before it runs them: the settings of the user's, the project's or an administrator's that
turn hooks off, read the way each CLI reads them (Gemini CLI's settings are JSON with comments).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from otelhooks.integrations.coding_agents._codex_toml import codex_toml
from otelhooks.integrations.coding_agents._gemini_json import gemini_json

__all__ = [
    "codex_home",
    "codex_hooks_off",
    "codex_trust_notes",
    "gemini_hooks_off",
    "gemini_reads",
    "gemini_system_files",
]

# Codex has no variable that moves its system folder; this one moves where install looks (a
# test's folder, or a machine whose policy is deployed elsewhere)
_CODEX_SYSTEM_DIR_ENV = "OTELHOOKS_CODEX_SYSTEM_DIR"


def codex_home() -> Path:
    """Codex's user folder: ``$CODEX_HOME``, else ``~/.codex``."""
    return Path(os.environ.get("CODEX_HOME") or "~/.codex").expanduser()


def _settings(path: Path) -> dict[str, Any]:
    # comments and all, as Gemini CLI reads it; None for no file, or one Gemini CLI skips
    data = gemini_json(path)
    config = data.get("hooksConfig") if isinstance(data, dict) else None
    return config if isinstance(config, dict) else {}


def gemini_system_files() -> tuple[Path, Path]:
    """Gemini CLI's system settings (an administrator's: over the user's and the project's)
    and system defaults (under them all), where Gemini CLI looks: the paths
    ``GEMINI_CLI_SYSTEM_SETTINGS_PATH`` and ``GEMINI_CLI_SYSTEM_DEFAULTS_PATH`` name, else
    ``/etc/gemini-cli/settings.json`` (Linux; ``/Library/Application Support/GeminiCli`` on
    macOS, ``C:\\ProgramData\\gemini-cli`` on Windows) and ``system-defaults.json`` beside it.
    Gemini CLI reads either only when root owns it and every folder above it, none of them
    writable by a group or others (POSIX)."""
    system = os.environ.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH")
    if not system:
        system = {
            "darwin": "/Library/Application Support/GeminiCli/settings.json",
            "win32": "C:/ProgramData/gemini-cli/settings.json",
        }.get(sys.platform, "/etc/gemini-cli/settings.json")
    defaults = os.environ.get("GEMINI_CLI_SYSTEM_DEFAULTS_PATH")
    return Path(system), Path(defaults or Path(system).parent / "system-defaults.json")


def gemini_reads(path: Path) -> bool:
    """Whether Gemini CLI reads the system file ``path``: on POSIX only when it and every
    folder above it (as given and resolved) belong to root and no group or other user can
    write them; it skips any other with a security warning."""
    if sys.platform == "win32":
        return True
    try:
        for item in {path, *path.parents, *path.resolve().parents}:
            if item.is_symlink() and item.lstat().st_uid != 0:
                return False
            stat = item.stat()
            if stat.st_uid != 0 or stat.st_mode & 0o022:
                return False
    except OSError:
        return False
    return True


def gemini_hooks_off(files: Sequence[Path], *, system: Path | None = None) -> list[str]:
    """Why Gemini CLI would run none of our hooks, from its settings ``files`` (highest
    precedence first: the system settings, the project's, the user's, the system defaults):
    ``hooksConfig.enabled: false`` in the first that sets it, or ``otelhooks`` (our handlers'
    name) in a ``hooksConfig.disabled`` (Gemini CLI joins every file's list). A note about
    ``system`` (the system settings file) says that only an administrator can change it.

    Example:
        >>> gemini_hooks_off([Path("/nonexistent/settings.json")])
        []
    """
    admin = "; Gemini CLI's system settings override the user's and the project's: only an "
    notes = []
    for path in files:
        enabled = _settings(path).get("enabled")
        if isinstance(enabled, bool):
            if not enabled:
                notes.append(
                    f"no installed hook will run: {path} sets `hooksConfig.enabled: false`, so "
                    "Gemini CLI runs no hook at all and the guards never see a tool call"
                    + (admin + "administrator can lift it" if path == system else "")
                )
            break
    for path in files:
        disabled = _settings(path).get("disabled")
        if isinstance(disabled, list) and "otelhooks" in disabled:
            notes.append(
                f"no installed hook will run: {path} lists `otelhooks` in "
                "`hooksConfig.disabled`, so Gemini CLI skips every hook of that name, ours"
                + (admin + "administrator can take it out" if path == system else "")
            )
    return notes


def _toml(path: Path) -> dict[str, Any]:
    return codex_toml(path) or {}


def _hooks_feature(config: dict[str, Any]) -> bool | None:
    """``[features] hooks`` (or its older name ``codex_hooks``) of a Codex TOML file."""
    features = config.get("features")
    if not isinstance(features, dict):
        return None
    value = features.get("hooks", features.get("codex_hooks"))
    return value if isinstance(value, bool) else None


def codex_hooks_off(target: Path, project: str | os.PathLike[str] | None) -> list[str]:
    """Why Codex would run none of the hooks written to ``target``, from the files Codex 0.171
    reads: the administrator's ``requirements.toml`` (``allow_managed_hooks_only = true``, or
    ``[features] hooks = false``), else ``[features] hooks = false`` in the first config layer
    that sets the feature, highest first: the legacy ``managed_config.toml``, the project's
    ``.codex/config.toml`` (with ``project``), ``$CODEX_HOME/config.toml``, the system
    ``config.toml``. When the default run keeps hooks on, one note per profile that turns them
    off: ``codex --profile NAME`` reads ``$CODEX_HOME/NAME.config.toml`` between the project's
    file and the user's. The system files are in ``/etc/codex``, or the folder
    ``$OTELHOOKS_CODEX_SYSTEM_DIR`` names. Requirements from the cloud or macOS managed
    preferences, and ``-c features.hooks=false`` on Codex's command line, are not seen."""
    system = Path(os.environ.get(_CODEX_SYSTEM_DIR_ENV) or "/etc/codex")
    requirements = system / "requirements.toml"
    admin = "Codex's requirements: an administrator's, which no config file overrides"
    required = _toml(requirements)
    if _hooks_feature(required) is False:
        return [
            f"no installed hook will run: {requirements} ({admin}) sets `[features] hooks = "
            "false`, so Codex runs no hook at all and the guards never see a tool call; only "
            "an administrator can lift it"
        ]
    if required.get("allow_managed_hooks_only") is True:
        return [
            f"no installed hook will run: {requirements} ({admin}) sets "
            "`allow_managed_hooks_only = true`, so Codex runs only managed hooks and ignores "
            f"those in {target}; the guards never see a tool call until an administrator adds "
            "the otelhooks hooks to the requirements' `[hooks]` (or to managed config)"
        ]
    home = codex_home()
    user = home / "config.toml"
    layers = [system / "managed_config.toml", user, system / "config.toml"]
    if project is not None:
        layers.insert(1, Path(project) / ".codex" / "config.toml")
    notes = _features_off(layers, user, run="")
    if notes:
        return notes
    # `codex --profile NAME` reads $CODEX_HOME/NAME.config.toml between the project's config
    # and the user's (Codex 0.171; a `[profiles.NAME]` table is refused, loudly): one that turns
    # hooks off runs no hook of ours under that profile, and install saw only the default run
    for profile in _profile_files(home):
        name = profile.name.removesuffix(".config.toml")
        layered = [*layers[: len(layers) - 2], profile, *layers[-2:]]
        notes += _features_off(layered, user, run=f" under `codex --profile {name}`", only=profile)
    return notes


def _profile_files(home: Path) -> list[Path]:
    try:
        names = sorted(p.name for p in home.iterdir() if p.name.endswith(".config.toml"))
    except OSError:
        return []
    return [home / n for n in names if n != ".config.toml" and not n.startswith(".")]


def _features_off(
    layers: Sequence[Path], user: Path, *, run: str, only: Path | None = None
) -> list[str]:
    """The note for ``[features] hooks = false`` in the first of ``layers`` that sets the
    feature (none when it is on, or, with ``only``, when another file decides)."""
    for path in layers:
        enabled = _hooks_feature(_toml(path))
        if enabled is None:
            continue
        if enabled or (only is not None and path != only):
            return []
        if path == layers[0]:
            what = "only an administrator can lift it (managed config overrides every config.toml)"
        elif path == layers[-1]:
            what = f"`hooks = true` under `[features]` in {user} overrides it"
        else:
            what = "remove it, or set it to true"
        return [
            f"no installed hook will run{run}: {path} sets `[features] hooks = false`, so Codex "
            f"runs no hook at all and the guards never see a tool call; {what}"
        ]
    return []


def codex_trust_notes(
    path: str | os.PathLike[str], project: str | os.PathLike[str] | None
) -> list[str]:
    """What Codex needs before it runs the hooks written to ``path`` (it skips untrusted hooks
    without a word): one sentence per step, the project's trust first when ``project`` is given.

    :func:`install_agent` puts these in the warnings of a Codex install.

    Example:
        >>> notes = codex_trust_notes(Path("/work/p/.codex/hooks.json"), Path("/work/p"))
        >>> len(notes), 'trust_level = "trusted"' in notes[0]
        (2, True)
    """
    notes = []
    if project is not None:
        notes.append(
            "Codex loads a project's .codex/hooks.json only for a trusted project: "
            f'$CODEX_HOME/config.toml needs [projects."{Path(project).resolve()}"] '
            'trust_level = "trusted"'
        )
    notes.append(
        f"Codex runs a hook only once its content is trusted ({path}): review and trust "
        "them in interactive Codex, or run `codex exec --dangerously-bypass-hook-trust`; "
        "until then Codex skips them silently"
    )
    return notes
