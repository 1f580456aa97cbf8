"""Script hooks: a function in a Python file, ``path/to/file.py:function``.

The agent OS's ``script_hook`` (there in Rhai or JavaScript) and the workspace engine's ``script``
rule (recognised but not implemented there). The file is executed once when the hook is built —
at config load, so every problem is a :class:`~otelhooks.ConfigError` naming the ``script`` field
(a syntax error also names the script's line) — and the module is cached by path and
modification time: hooks naming the same unchanged file share one module, and an edited file is
loaded again by the next load (the next run), never in the middle of one. The file's own text
is compiled each time, never CPython's bytecode cache of it, and so are the modules beside it
(see :class:`_FreshLoader`).

Relative paths are resolved against the current directory here; the config loaders resolve them
against the config file's directory first. The function follows the handler return protocol.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import CodeType, ModuleType
from typing import TYPE_CHECKING, Any

from otelhooks._actions._handler import HandlerAction
from otelhooks._errors import ConfigError

if TYPE_CHECKING:
    from otelhooks._hooks import Hook

__all__ = ["ScriptAction", "load_script_function", "split_script_ref"]

_modules: dict[tuple[str, int, int], ModuleType] = {}
_lock = threading.Lock()  # the table above and the import path, each held for a moment
# the lock of each file being run; reentrant: a script may load hooks (and scripts) as it loads
_loading: dict[tuple[str, int, int], threading.RLock] = {}


class _FreshLoader(importlib.machinery.SourceFileLoader):
    """Compiles the script's text as it is on disk. CPython's bytecode cache (``__pycache__``)
    tells a file's versions apart by its size and its time in whole seconds: a guard tightened
    within the second of its last save, same length (``"rm"`` to ``"rf"``), ran as the old one.
    So do the helpers beside it (:func:`_helpers_finder`)."""

    def get_code(self, fullname: str) -> CodeType:
        path = self.get_filename(fullname)
        return self.source_to_code(self.get_data(path), path)


# the folders this module put on the import path: the scripts' own, whose helpers it loads
_folders: set[str] = set()


def _helpers_finder(entry: str) -> importlib.machinery.FileFinder:
    """The finder of a folder this module put on the import path: its Python files compiled
    from their text, as the script beside them is. Any other folder is left to the usual
    finders (``ImportError``)."""
    if entry not in _folders:
        raise ImportError(entry)
    return importlib.machinery.FileFinder(
        entry,
        (importlib.machinery.ExtensionFileLoader, importlib.machinery.EXTENSION_SUFFIXES),
        (_FreshLoader, importlib.machinery.SOURCE_SUFFIXES),
        (importlib.machinery.SourcelessFileLoader, importlib.machinery.BYTECODE_SUFFIXES),
    )


def _shadowed_helpers(folder: str) -> list[str]:
    """The helpers beside a script (``rules.py``, or a ``rules`` package) whose names another
    script's folder gave a module first: ``import rules`` in both scripts finds the first one,
    and the second guard would decide by the other's rules."""
    found = []
    for name, module in list(sys.modules.items()):
        origin = getattr(module, "__file__", None)
        if "." in name or not isinstance(origin, str):
            continue
        home = os.path.dirname(origin)
        if os.path.basename(origin) == "__init__.py":
            home = os.path.dirname(home)
        if home == folder or home not in _folders:
            continue
        beside = os.path.join(folder, name)
        if os.path.isfile(beside + ".py") or os.path.isdir(beside):
            found.append(f"{name} (imported first from {home})")
    return found


def split_script_ref(ref: str) -> tuple[str, str]:
    """``path/to/file.py:function`` → (path, function). The last ``:`` separates them."""
    path, sep, function = ref.rpartition(":")
    if not sep or not path or not function.isidentifier():
        raise ConfigError(
            f"script {ref!r} must name a file and a function: 'path/to/file.py:function'",
            field="script",
        )
    return path, function


def _load_module(path: Path) -> ModuleType:
    try:
        stat = path.stat()
    except OSError as exc:
        raise ConfigError(
            f"cannot read script {str(path)!r}: {exc.strerror}", field="script"
        ) from None
    if not path.is_file():
        raise ConfigError(f"script {str(path)!r} is not a file", field="script")
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    with _lock:
        cached = _modules.get(key)
        if cached is not None:
            return cached
        loading = _loading.setdefault(key, threading.RLock())
    # One lock per file while it runs: a script that hangs as it is imported (a policy fetched
    # from a host that does not answer) holds its own file, never every other script's load
    # in the process (a daemon's next config, an install's bounded read).
    with loading:
        try:
            return _modules.get(key) or _run_module(path, key)
        finally:
            with _lock:
                _loading.pop(key, None)


def _run_module(path: Path, key: tuple[str, int, int]) -> ModuleType:
    digest = hashlib.sha1(str(key).encode(), usedforsecurity=False).hexdigest()[:12]
    name = f"otelhooks_script_{path.stem if path.stem.isidentifier() else 'm'}_{digest}"
    spec = importlib.util.spec_from_file_location(name, path, loader=_FreshLoader(name, str(path)))
    if spec is None or spec.loader is None:
        raise ConfigError(f"script {str(path)!r} is not a Python file", field="script")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up by name
    with _lock:
        _on_import_path(str(path.parent))
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        sys.modules.pop(name, None)
        raise ConfigError(
            f"script {str(path)!r} line {exc.lineno}: syntax error: {exc.msg}", field="script"
        ) from None
    except (Exception, SystemExit) as exc:
        sys.modules.pop(name, None)
        raise ConfigError(
            f"script {str(path)!r} failed while loading: {type(exc).__name__}: {exc}",
            field="script",
        ) from None
    shadowed = _shadowed_helpers(str(path.parent))
    if shadowed:
        sys.modules.pop(name, None)
        raise ConfigError(
            f"script {str(path)!r}: the helpers beside it have the names of another "
            f"script's helpers, which Python imports once per process: "
            f"{', '.join(shadowed)}; rename one of them",
            field="script",
        )
    with _lock:
        _modules[key] = module
    return module


def _on_import_path(folder: str) -> None:
    """The script's own helpers beside it import, wherever the process runs (the bridge does
    not put its working folder on the path); appended, so that a file there never shadows an
    installed module (a project's own logging.py)."""
    if folder in sys.path:
        return
    if _helpers_finder not in sys.path_hooks:
        sys.path_hooks.insert(0, _helpers_finder)
    _folders.add(folder)
    sys.path_importer_cache.pop(folder, None)  # a finder of it from before
    sys.path.append(folder)


def load_script_function(ref: str, *, base_dir: Path | None = None) -> Callable[..., Any]:
    """Load the function ``ref`` names (``path.py:function``), relative to ``base_dir``.

    Raises:
        ConfigError: naming the ``script`` field: a bad reference, a missing or unreadable file,
            a syntax error (with its line), an error while the file runs, no such function.
    """
    raw_path, function = split_script_ref(ref)
    path = Path(raw_path).expanduser()
    if not path.is_absolute():
        path = (base_dir or Path.cwd()) / path
    module = _load_module(path.resolve())
    target = getattr(module, function, None)
    if target is None:
        raise ConfigError(f"script {raw_path!r} has no function {function!r}", field="script")
    if not callable(target):
        raise ConfigError(f"{function!r} in script {raw_path!r} is not callable", field="script")
    return target  # type: ignore[no-any-return]


class ScriptAction(HandlerAction):
    """Calls the script's function with the payload, like a Python handler."""

    kind = "script"

    __slots__ = ("ref",)

    def __init__(self, hook: Hook) -> None:
        assert hook.script is not None
        super().__init__(load_script_function(hook.script))
        self.ref = hook.script

    def __repr__(self) -> str:
        return f"ScriptAction({self.ref!r})"
