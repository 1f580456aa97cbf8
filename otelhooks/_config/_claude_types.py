"""The settings whose wrong JSON type makes Claude Code skip a whole settings file.

Claude Code (checked with 2.1.332) validates each settings file against its schema and, when a
known setting has the wrong type (``"model": 5``, ``"permissions": {"allow": "Bash"}``), ignores
the file whole, its hooks included, saying nothing in ``-p`` mode: a guard ``otelhooks
claude-code install`` wrote there never runs. :func:`wrong_types` names such settings so install
refuses the file and ``otelhooks validate`` reports it.

The table holds the documented top-level settings and the members of ``permissions`` whose
schema in the CLI has no fallback (a setting the CLI drops silently when it is wrong, such as
``effortLevel``, is left out), each with its JSON type only: values of the right type that the
CLI still rejects (an enum's unknown word, ``cleanupPeriodDays: 0``) are not checked, and an
unknown key passes, as it does in the CLI.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["wrong_types"]

_STRING = [
    "agent",
    "apiKeyHelper",
    "autoMemoryDirectory",
    "autoUpdatesChannel",
    "awsAuthRefresh",
    "awsCredentialExport",
    "language",
    "model",
    "otelHeadersHelper",
    "outputStyle",
    "plansDirectory",
]
_BOOLEAN = [
    "allowManagedHooksOnly",
    "allowManagedMcpServersOnly",
    "allowManagedPermissionRulesOnly",
    "alwaysThinkingEnabled",
    "disableAllHooks",
    "disableSkillShellExecution",
    "enableAllProjectMcpServers",
    "fastMode",
    "includeCoAuthoredBy",
    "includeGitInstructions",
    "prefersReducedMotion",
    "respectGitignore",
    "showTurnDuration",
    "spinnerTipsEnabled",
    "terminalProgressBarEnabled",
]
_STRINGS = [
    "allowedHttpHookUrls",
    "availableModels",
    "claudeMdExcludes",
    "companyAnnouncements",
    "disabledMcpjsonServers",
    "enabledMcpjsonServers",
    "httpHookAllowedEnvVars",
]
_OBJECT = ["env", "enabledPlugins", "modelOverrides", "permissions", "sandbox"]

# JSON type names as the messages say them
TOP: dict[str, str] = {
    **dict.fromkeys(_STRING, "a string"),
    **dict.fromkeys(_BOOLEAN, "true or false"),
    **dict.fromkeys(_STRINGS, "a list of strings"),
    **dict.fromkeys(_OBJECT, "an object"),
    "cleanupPeriodDays": "a number",
}
PERMISSIONS: dict[str, str] = {
    **dict.fromkeys(["allow", "deny", "ask", "additionalDirectories"], "a list of strings"),
    "defaultMode": "a string",
    "disableBypassPermissionsMode": "a string",
}


def _fits(value: Any, kind: str) -> bool:
    # null is no value of any of these: the CLI's schema marks them optional, not nullable
    if kind == "a string":
        return isinstance(value, str)
    if kind == "true or false":
        return isinstance(value, bool)
    if kind == "a number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "a list of strings":
        return isinstance(value, list) and all(isinstance(item, str) for item in value)
    return isinstance(value, dict)


def _shown(value: Any) -> str:
    # as JSON, the way the file says it (null, false, ["a"]), escaped: the message is one line
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def wrong_types(settings: Any) -> list[str]:
    """The known settings of a parsed Claude Code settings file whose JSON type Claude Code
    rejects (skipping the whole file), one sentence each, ``[]`` when there is none.

    Example:
        >>> wrong_types({"model": 5, "permissions": {"allow": "Bash"}, "mine": 1})
        ['"model" is 5, not a string', '"permissions.allow" is "Bash", not a list of strings']
    """
    if not isinstance(settings, dict):
        return []
    found = [
        f'"{key}" is {_shown(settings[key])}, not {kind}'
        for key, kind in TOP.items()
        if key in settings and not _fits(settings[key], kind)
    ]
    members = settings.get("permissions")
    if isinstance(members, dict):
        found += [
            f'"permissions.{key}" is {_shown(members[key])}, not {kind}'
            for key, kind in PERMISSIONS.items()
            if key in members and not _fits(members[key], kind)
        ]
    return found
