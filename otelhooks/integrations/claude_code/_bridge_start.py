"""How the hook client starts the bridge: the otelhooks beside it, whatever Python the CLI's
environment names.

The hook client (``hook_client.py``) runs this file by path, with ``python -E -P``: the
interpreter reads no ``PYTHON*`` variable. A coding agent's CLI hands its hooks the environment
it was started in, and there a ``PYTHONHOME`` of another Python (its standard library not
found) or a ``PYTHONPATH`` of another project or Python version (a ROS workspace's, a ``src``
holding a ``yaml`` package) shadowed the bridge's own modules: it ended at import, exit 1, and
Codex CLI, Gemini CLI and Claude Code ran every tool call the guards were to judge.

So the bridge imports otelhooks from the folder this file is in (the installation whose hook
client runs it) and its dependencies from its own interpreter; the ``PYTHONPATH`` folders come
after them (a ``script:`` guard may import the user's modules from there), and
``PYTHONDONTWRITEBYTECODE`` is kept. The environment itself is left as it is: the command hooks
the bridge runs get it whole. Standard library only, as the hook client.
"""

from __future__ import annotations

import os
import runpy
import sys


def main() -> None:
    """Put this otelhooks first and the environment's ``PYTHONPATH`` last on the import path,
    then run ``python -m otelhooks`` with this process's arguments."""
    here = os.path.abspath(__file__)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(here))))
    if root not in sys.path:
        sys.path.insert(0, root)
    for folder in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        if folder and folder not in sys.path:
            sys.path.append(folder)
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        sys.dont_write_bytecode = True
    runpy.run_module("otelhooks", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
