"""Plugin hooks: hook functions that installed packages publish, referenced by name.

The agent OS's ``dll_hook`` loads a native plugin and uses a hook kind the plugin registered by
name. Here a plugin is an installed Python distribution that declares entry points in the group
:data:`ENTRY_POINT_GROUP` (``otelhooks.hooks``)::

    # the plugin's pyproject.toml
    [project.entry-points."otelhooks.hooks"]
    audit = "my_plugin.hooks:audit"

and a hook says ``plugin: audit``. The entry point is loaded when the hook is built (config load):
an unknown name, a name two distributions publish, an import error or a non-callable target is a
:class:`~otelhooks.ConfigError` naming the ``plugin`` field. The function follows the handler
return protocol.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING, Any, Final

from otelhooks._actions._handler import HandlerAction
from otelhooks._errors import ConfigError

if TYPE_CHECKING:
    from otelhooks._hooks import Hook

__all__ = ["ENTRY_POINT_GROUP", "PluginAction", "available_plugins", "load_plugin"]

ENTRY_POINT_GROUP: Final = "otelhooks.hooks"


def _published(name: str | None = None) -> list[EntryPoint]:
    found = entry_points(group=ENTRY_POINT_GROUP)
    return [ep for ep in found if name is None or ep.name == name]


def _distribution(ep: EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return str(getattr(dist, "name", None) or "?")


def available_plugins() -> list[str]:
    """The names published in the ``otelhooks.hooks`` group, sorted."""
    return sorted({ep.name for ep in _published()})


def load_plugin(name: str) -> Callable[..., Any]:
    """Load the hook function published under ``name``.

    Raises:
        ConfigError: naming the ``plugin`` field.
    """
    candidates = _published(name)
    # The same distribution found twice on the path (an editable install and a copy) is one.
    distinct = {(ep.value, _distribution(ep)): ep for ep in candidates}
    if not distinct:
        known = ", ".join(available_plugins()) or "none installed"
        raise ConfigError(
            f"no installed package publishes a hook named {name!r} in the "
            f"{ENTRY_POINT_GROUP!r} entry-point group (published: {known})",
            field="plugin",
        )
    if len(distinct) > 1:
        owners = ", ".join(sorted(f"{dist} ({value})" for value, dist in distinct))
        raise ConfigError(f"hook name {name!r} is published by several: {owners}", field="plugin")
    ep = next(iter(distinct.values()))
    try:
        target = ep.load()
    except (Exception, SystemExit) as exc:
        raise ConfigError(
            f"cannot load plugin hook {name!r} ({ep.value}): {type(exc).__name__}: {exc}",
            field="plugin",
        ) from None
    if not callable(target):
        raise ConfigError(f"plugin hook {name!r} ({ep.value}) is not callable", field="plugin")
    return target  # type: ignore[no-any-return]


class PluginAction(HandlerAction):
    """Calls the published function with the payload, like a Python handler."""

    kind = "plugin"

    __slots__ = ("name",)

    def __init__(self, hook: Hook) -> None:
        assert hook.plugin is not None
        super().__init__(load_plugin(hook.plugin))
        self.name = hook.plugin

    def __repr__(self) -> str:
        return f"PluginAction({self.name!r})"
