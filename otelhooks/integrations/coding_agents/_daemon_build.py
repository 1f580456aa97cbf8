"""What a bridge daemon is built from, and how it sees that change.

:func:`build_bridge` builds, once, the bridge the one-process form builds per event (state in
memory + file); :func:`sources_of` lists the files it was built from, each with its
:func:`stamp`, so the daemon (:mod:`._daemon`) sees a hooks file or a guard's code change and
leaves instead of running the old guard.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from otelhooks._actions._script import split_script_ref
from otelhooks.integrations.coding_agents._bridge import CodingAgentBridge
from otelhooks.integrations.coding_agents._run import (
    _CAPTURE_ENV,
    BRIDGE_SHUTDOWN_TIMEOUT_S,
    TRACES_ENV,
    BridgeOptions,
    _truthy,
)
from otelhooks.integrations.coding_agents._sessions import ServerSessions
from otelhooks.integrations.coding_agents._state import DEFAULT_STATE_PATH, STATE_ENV, env_value

if TYPE_CHECKING:
    from otelhooks._hooks import Hook

__all__ = ["Stamp", "build_bridge", "sources_of", "stamp"]

Stamp = tuple[int, ...]  # a file's identity and version (stamp)


def sources_of(
    paths: Iterable[str | os.PathLike[str]], hooks: Iterable[Hook], *, read_since: int = 0
) -> dict[str, Stamp]:
    """The files a daemon's hooks were built from, each with its modification time: the hook
    files and folders it was given, the export files (which may name more hooks; one not there
    yet too, as its coming changes them) and each config file read, and the file of every
    Python function a hook calls (``script:``, ``handler:``, ``plugin:``; a ``script:`` also as
    written, where a symlink may be retargeted), and the modules beside a ``script:`` imported
    by the time the hooks were built (its helpers); a module imported later, or from elsewhere,
    is not followed. Each is stamped with its identity too (:func:`stamp`). A file modified
    since ``read_since`` (``time.time_ns()`` before the first was read) may have changed after
    it was read: its stamp is :data:`_CHANGED`, which no file has, so the daemon leaves at its
    first event instead of running the old guard."""
    files = [os.fspath(p) for p in paths]
    beside: set[str] = set()  # the folders of scripts, on the import path as they load
    for hook in hooks:
        code = getattr(getattr(hook.action, "fn", None), "__code__", None)
        if code is not None and os.path.isfile(code.co_filename):
            files.append(code.co_filename)
        if hook.script is not None:
            files.append(os.path.expanduser(split_script_ref(hook.script)[0]))
            if code is not None:
                beside.add(os.path.dirname(code.co_filename))
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if isinstance(file, str) and os.path.dirname(file) in beside:
            files.append(file)
    since = read_since - _COARSE_CLOCK_NS
    stamps = {path: stamp(path) for path in files}
    return {path: _CHANGED if s[-1] >= since > 0 else s for path, s in stamps.items()}


# a file's time is the kernel's coarse clock, up to a tick (10 ms) behind ``time.time_ns()``
_COARSE_CLOCK_NS = 50_000_000
_CHANGED = (-2,)  # the stamp of a file that may have changed since it was read


def stamp(path: str) -> Stamp:
    """A file's identity and version (``(-1,)``: no such file). Its time alone missed a file
    replaced by one of the same time: a symlinked hooks file or guard retargeted into a Nix
    store, whose files all have the time 1, or a copy that kept its time renamed over it."""
    try:
        info = os.stat(path)
    except OSError:
        return (-1,)
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def build_bridge(
    options: BridgeOptions, env: Mapping[str, str]
) -> tuple[CodingAgentBridge, dict[str, Stamp]]:
    """The bridge the one-process form builds per event, built once (state in memory + file),
    and the files it was built from (:func:`sources_of`)."""
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter

    from otelhooks._config import load_config
    from otelhooks._export import OtlpJsonLinesSpanExporter
    from otelhooks._export._batch import CountingBatchSpanProcessor
    from otelhooks._export._report import DeliveryTracker, shutdown_timeout
    from otelhooks._resource import recording_resource
    from otelhooks.integrations.coding_agents._environment import (
        approval_tokens,
        otlp_exporter,
        project_path,
    )
    from otelhooks.integrations.coding_agents._run import hooks_and_settings
    from otelhooks.integrations.coding_agents._spans import LockedFileExporter, SpanWriter

    began = time.time_ns()
    hook_paths, settings, export_files = hooks_and_settings(options, env)
    loaded = load_config(hook_paths)
    hooks = loaded.hooks
    approval_tokens(hooks, export_files, env)
    service = settings.get("OTEL_SERVICE_NAME") or options.service_name
    writer = SpanWriter((), recording_resource({"service.name": service}))
    traces_out = options.traces_out or settings.get(TRACES_ENV)
    if traces_out:
        path = os.fspath(project_path(traces_out, env))
        # as long as the one-process bridge waits for it: an event's answer waits on this
        file_exporter: SpanExporter = LockedFileExporter(
            OtlpJsonLinesSpanExporter(path),
            f"{path}.lock",
            wait_s=shutdown_timeout(BRIDGE_SHUTDOWN_TIMEOUT_S),
        )
        # written as each span ends: a reader (or the one-process bridge) sees it at once
        writer.provider.add_span_processor(SimpleSpanProcessor(file_exporter))
    tracker = DeliveryTracker("spans", "")
    otlp = otlp_exporter(settings, tracker)
    if otlp is not None:
        # configure()'s processor: its tracker hears why an export failed, so a batch too
        # large for the collector is sent again in halves (the SDK's lost it whole)
        batcher = CountingBatchSpanProcessor(otlp, schedule_delay_s=0.5, tracker=tracker)
        writer.provider.add_span_processor(batcher)
    state = options.state or env_value(settings, STATE_ENV)
    state_path = project_path(state, env) if state else DEFAULT_STATE_PATH.expanduser()
    from otelhooks.integrations.coding_agents._dialects import dialect_named
    from otelhooks.integrations.coding_agents._mapping import project_dir

    dialect = dialect_named(options.dialect)
    bridge = CodingAgentBridge(
        agent=dialect.agent,
        provider=dialect.provider,
        hooks=hooks,
        state=ServerSessions(state_path),
        writer=writer,
        deny_mode=options.deny_mode,
        service_name=service,
        capture=_truthy(settings.get(_CAPTURE_ENV)),
        project_dir=project_dir(env),
        fail_closed=options.fail_closed,
    )
    read: list[str | os.PathLike[str]] = [
        *hook_paths,
        *export_files,
        *(s.path for s in loaded.sources),
    ]
    # A file saved while the hooks loaded (a guard's module imports slowly, the build takes a
    # second on a busy machine) kept the time of its new text, and the daemon ran the old one
    # for as long as events kept coming.
    return bridge, sources_of(read, hooks, read_since=began)
