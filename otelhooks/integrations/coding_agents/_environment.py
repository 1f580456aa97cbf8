"""Paths and settings as Claude Code runs hooks: its project folder, no ``OTEL_*`` variables.

Claude Code runs a hook command in its *current* folder (which may be a subfolder of the project)
and removes every ``OTEL_*`` variable from the hook's environment. So:

- a relative ``--hooks``, ``--traces-out``, ``--state`` or ``--export-env`` path (and the same
  paths from ``$OTELHOOKS_HOOKS``, ``$OTELHOOKS_TRACES_OUT``, ``$OTELHOOKS_BRIDGE_STATE``) is
  resolved against ``$CLAUDE_PROJECT_DIR`` when Claude Code sets it, else the current folder;
- export settings are read from an *export file*: ``otelhooks.env`` in the folder of each
  ``--hooks`` path (or the file ``--export-env`` names). One ``KEY=VALUE`` per line, ``#``
  comments, an optional ``export`` prefix, values optionally quoted, no ``$`` expansion. Only
  ``OTEL_*`` and ``OTELHOOKS_*`` keys are read; a variable the process already has wins. The
  variable an ``approval:`` names in ``token_env`` is read too (:func:`approval_tokens`), for
  that approval only: it is never put in the environment hooks run with.

Example ``.claude/otelhooks.env``::

    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318
    OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer abc
    OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=false
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Final
from urllib.parse import unquote

from opentelemetry.sdk.trace.export import SpanExporter

from otelhooks._actions._approval import ApprovalAction, add_export_tokens
from otelhooks._errors import ConfigError
from otelhooks._export._otlp_grpc import GrpcSpanExporter, otlp_timeout
from otelhooks._export._report import DeliveryTracker
from otelhooks._hooks import Hook
from otelhooks._redact import register_secret

__all__ = [
    "EXPORT_FILE",
    "PROJECT_DIR_ENV",
    "approval_tokens",
    "export_files",
    "export_settings",
    "otlp_exporter",
    "project_path",
    "read_export_file",
]

PROJECT_DIR_ENV: Final = "CLAUDE_PROJECT_DIR"
EXPORT_FILE: Final = "otelhooks.env"
_PREFIXES: Final = ("OTEL_", "OTELHOOKS_")
_MAX_BYTES: Final = 64 * 1024


def project_path(path: str | os.PathLike[str], environ: Mapping[str, str]) -> Path:
    """``path`` with ``~`` expanded; relative paths resolved against ``$CLAUDE_PROJECT_DIR``.

    Example:
        >>> str(project_path("a/b", {"CLAUDE_PROJECT_DIR": "/p"}))
        '/p/a/b'
    """
    resolved = Path(path).expanduser()
    project = environ.get(PROJECT_DIR_ENV, "").strip()
    if resolved.is_absolute() or not project:
        return resolved
    return Path(project).expanduser() / resolved


def read_export_file(path: Path, names: Iterable[str] = ()) -> dict[str, str]:
    """The ``OTEL_*`` / ``OTELHOOKS_*`` settings of one export file (see the module docstring),
    and the values of ``names`` (an approval's ``token_env``) when it sets them.

    Raises:
        ConfigError: the file cannot be read, is too large, or has a line that is not
            ``KEY=VALUE`` (with the line number).
    """
    try:
        with path.open("rb") as handle:
            raw = handle.read(_MAX_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror or exc}", file=str(path)) from None
    if len(raw) > _MAX_BYTES:
        raise ConfigError(f"more than {_MAX_BYTES} bytes", file=str(path))
    settings: dict[str, str] = {}
    wanted = frozenset(names)
    # a byte order mark is no part of the first key: Windows editors save UTF-8 with one, and
    # the whole file was refused (every hook process exited 1: every guard off)
    content = raw.decode("utf-8", "replace").removeprefix("\ufeff")
    for number, line in enumerate(content.splitlines(), 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        if text.startswith("export "):
            text = text[len("export ") :].lstrip()
        key, sep, value = text.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not key.replace("_", "").isalnum():
            raise ConfigError("expected KEY=VALUE", file=str(path), line=number)
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        if key.startswith(_PREFIXES) or key in wanted:
            settings.setdefault(key, value)
    return settings


def export_files(hook_paths: Iterable[Path], explicit: Path | None) -> list[Path]:
    """The export files that apply, whether they exist or not: ``explicit`` (read, so it must
    exist), else ``otelhooks.env`` in the folder of each hooks path (read when it exists)."""
    if explicit is not None:
        return [explicit]
    found: list[Path] = []
    for hooks in hook_paths:
        folder = hooks if hooks.is_dir() else hooks.parent
        candidate = folder / EXPORT_FILE
        if candidate not in found:
            found.append(candidate)
    return found


def export_settings(
    hook_paths: Iterable[Path], explicit: Path | None, environ: Mapping[str, str]
) -> dict[str, str]:
    """The settings that apply: the export files' values under the process's own variables."""
    merged: dict[str, str] = {}
    for path in export_files(hook_paths, explicit):
        if path != explicit and not path.is_file():
            continue
        for key, value in read_export_file(path).items():
            merged.setdefault(key, value)
    merged.update({k: v for k, v in environ.items() if k.startswith(_PREFIXES)})
    return merged


def approval_tokens(
    hooks: Iterable[Hook], files: Iterable[Path], environ: Mapping[str, str]
) -> None:
    """Give each ``approval:`` of ``hooks`` whose ``token_env`` the process lacks the value the
    export ``files`` set for it (:func:`~otelhooks._actions._approval.add_export_tokens`). Gemini
    CLI removes a variable named ``*TOKEN*`` from hooks' environment: the hook client restores
    ``OTELHOOKS_*`` names from the file, and this the name an approval chose."""
    names = {
        h.action.config.token_env
        for h in hooks
        if isinstance(h.action, ApprovalAction) and h.action.config.token_env
    } - set(environ)
    if not names:
        return
    found: dict[str, str] = {}
    for path in files:
        if path.is_file():
            for key, value in read_export_file(path, names).items():
                if key in names:
                    found.setdefault(key, value)
    add_export_tokens(found)


def _headers(settings: Mapping[str, str]) -> dict[str, str]:
    raw = settings.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS") or settings.get(
        "OTEL_EXPORTER_OTLP_HEADERS", ""
    )
    headers: dict[str, str] = {}
    for pair in raw.split(","):
        name, sep, value = pair.partition("=")
        if sep and name.strip():
            headers[unquote(name.strip()).lower()] = unquote(value.strip())
            register_secret(unquote(value.strip()))  # header values are credentials
    return headers


def otlp_exporter(
    settings: Mapping[str, str], tracker: DeliveryTracker | None = None
) -> SpanExporter | None:
    """An OTLP span exporter configured from ``settings`` (``None`` without an endpoint).

    Reads the standard variables: ``OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT``, ``..._PROTOCOL``
    (``http/protobuf`` default, or ``grpc``) and ``..._HEADERS``; over gRPC also the others
    the SDK's gRPC exporter reads (see :class:`GrpcSpanExporter`). With a ``tracker``
    (fail-fast, as a hook process must be: Claude Code gives ``SessionEnd`` hooks
    1.5 s) a refused or silent collector is given up on at once and reported; the export
    timeout is the tracker's.
    """
    traces = settings.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    base = settings.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    if not traces and not base:
        return None
    protocol = (
        settings.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or settings.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    ).strip()
    # capped by the tracker (a hook process's: fail-fast) at each request
    timeout = otlp_timeout(settings, "TRACES")
    headers = _headers(settings)
    if protocol == "grpc":
        # tracked or not (the bridge daemon's): the SDK's exporter raised on a setting ours takes
        tracker = tracker or DeliveryTracker("spans", "")
        tracker.destination = traces or base
        return GrpcSpanExporter(
            tracker, settings, endpoint=traces or base, headers=headers, timeout=timeout
        )
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as H

    # the base endpoint gets the signal path appended, as the specification says
    endpoint = traces or f"{base.rstrip('/')}/v1/traces"
    if tracker is not None:
        from otelhooks._export._otlp_http import tracked_session

        tracker.destination = endpoint
        return H(
            endpoint=endpoint, headers=headers, timeout=timeout, session=tracked_session(tracker)
        )
    return H(endpoint=endpoint, headers=headers, timeout=timeout)
