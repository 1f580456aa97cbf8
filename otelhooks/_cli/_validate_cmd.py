"""``otelhooks validate PATH...``: check config files of every format; every problem, located."""

from __future__ import annotations

import argparse

__all__ = ["add_parser", "report_lines"]


def report_lines(paths: list[str]) -> tuple[list[str], int]:
    """The report of ``otelhooks validate`` and the number of problems."""
    from otelhooks._config import inspect_config

    lines: list[str] = []
    problems = hooks = 0
    sources = inspect_config(paths)
    for source in sources:
        kind = source.format or "?"
        if source.problems:
            count = len(source.problems)
            problems += count
            lines.append(f"FAIL {source.path} [{kind}]: {count} problem{'s' * (count != 1)}")
            lines.extend(f"  {problem}" for problem in source.problems)
            continue
        hooks += len(source.hooks)
        parts = [f"{len(source.hooks)} hook{'s' * (len(source.hooks) != 1)}"]
        if source.agent_events:
            parts.append(f"{len(source.agent_events)} agent_events")
        if source.workspace_id:
            parts.append(f"workspace {source.workspace_id}")
        if source.skipped:
            parts = [f"skipped: {source.skipped}"]
        lines.append(f"OK   {source.path} [{kind}]: {', '.join(parts)}")
    files = len(sources)
    lines.append(
        f"{files} file{'s' * (files != 1)}, {hooks} hook{'s' * (hooks != 1)}, "
        f"{problems} problem{'s' * (problems != 1)}"
    )
    return lines, problems


def _validate(args: argparse.Namespace) -> int:
    lines, problems = report_lines(args.paths)
    print("\n".join(lines))
    return 1 if problems else 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    validate = sub.add_parser(
        "validate",
        help="check hook config files (every format) and print every problem",
        description="Check workspace *.hook.json files, agent-OS YAML, LobeHub-style hook lists "
        "and kernel app manifests. Folders mean the config files directly in them. Prints one "
        "line per file and every problem with its file, line, hook and field; exits 0 only "
        "when everything is valid.",
    )
    validate.add_argument("paths", nargs="+", metavar="PATH", help="config files or folders")
    validate.set_defaults(func=_validate)
