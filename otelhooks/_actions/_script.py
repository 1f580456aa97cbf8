"""Script hooks: a function in a Python file, ``path/to/file.py:function``.

The agent OS's ``script_hook`` (there in Rhai or JavaScript) and the workspace engine's ``script``
rule (recognised but not implemented there). The file is executed once when the hook is built —
at config load, so every problem is a :class:`~otelhooks.ConfigError` naming the ``script`` field
(a syntax error also names the script's line) — and the module is cached by path and
modification time: hooks naming the same unchanged file share one module, and an edited file is
loaded again by the next load (the next run), never in the middle of one. Each file is run by
one thread at a time, others loading it wait for that run; scripts that load each other as they
load (a cycle through ``load_config``) are refused, never waited on. The file's own text
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

_Key = tuple[str, int, int]
_modules: dict[_Key, ModuleType] = {}
# The tables here and the import path, each held for a moment. A file being run belongs to the
# thread running it (``_running``); a thread waiting for another's file says which
# (``_waiting``), so that scripts loading each other as they load (a hooks file that names a
# script which loads the first one's hooks file) are found and refused, never waited on for
# ever, as Python's own imports find such a deadlock.
_lock = threading.Condition()
_running: dict[_Key, int] = {}
_waiting: dict[int, _Key] = {}


def _forget_loads() -> None:
    """After a fork, in the child: none of the parent's threads is there, so a file one of them
    was running would be waited on for ever (and the lock may have been held at the fork)."""
    global _lock
    _lock = threading.Condition()
    _running.clear()
    _waiting.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_loads)


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
    # One file at a time per file, not per process: a script that hangs as it is imported (a
    # policy fetched from a host that does not answer) holds its own file, never every other
    # script's load in the process (a daemon's next config, an install's bounded read).
    cached = _claim(key)
    if cached is not None:
        return cached
    try:
        return _run_module(path, key)
    finally:
        with _lock:
            _running.pop(key, None)  # gone if this is a child forked while it ran the file
            _lock.notify_all()


def _claim(key: _Key) -> ModuleType | None:
    """The module of ``key`` once loaded, or None when this thread is now the one to run it
    (it waits while another thread runs it).

    Raises:
        ConfigError: the file is being loaded by this thread already, or by a thread that waits,
            through others perhaps, for a file this thread is loading: they load each other.
    """
    me = threading.get_ident()
    with _lock:
        while True:
            cached = _modules.get(key)
            if cached is not None:
                return cached
            owner = _running.get(key)
            if owner is None:
                _running[key] = me
                return None
            cycle = _cycle(key, owner, me)
            if cycle is not None:
                raise ConfigError(
                    f"script {key[0]!r} is loaded again while it loads: {cycle}; scripts "
                    "that load each other's hooks as they load would wait for ever",
                    field="script",
                )
            _waiting[me] = key
            try:
                _lock.wait()
            finally:
                _waiting.pop(me, None)


def _cycle(key: _Key, owner: int, me: int) -> str | None:
    """The chain of loads that would wait on ``me`` for ever if ``me`` waited for ``key``, whose
    file ``owner`` runs; None when there is none (call with the lock held)."""
    chain = [key[0]]
    seen: set[int] = set()
    while owner != me:
        wanted = _waiting.get(owner)
        if wanted is None or owner in seen:
            return None  # the owner runs on: it will finish, or fail, and wake us
        seen.add(owner)
        chain.append(wanted[0])
        runner = _running.get(wanted)
        if runner is None:
            return None  # done meanwhile: the waiter goes on once it wakes
        owner = runner
    if len(chain) == 1:
        # loaded again by its own thread: name the file it is loaded back from, if another
        chain += [k[0] for k, thread in _running.items() if thread == me and k != key][-1:]
    return " -> ".join([*chain, key[0]])


def _run_module(path: Path, key: _Key) -> ModuleType:
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
