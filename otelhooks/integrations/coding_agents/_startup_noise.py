"""What bash prints before a Codex CLI hook's answer: the file ``BASH_ENV`` names.

Codex CLI 0.171 runs a command hook as ``/bin/bash -c <command>``, and a non-interactive bash
first runs the file ``BASH_ENV`` names (a Docker image's ``ENV BASH_ENV=/root/.bashrc``, for
conda or nvm). What that file prints reaches the hook's stdout before the bridge's answer, and
Codex reads a hook's JSON only from a stdout that holds nothing else. A deny survives that (exit
2, read whatever stdout holds), an allowed rewrite (``updatedInput``) does not: Codex dropped it
and ran the original command. The bridge cannot read back what is already on its stdout (Codex
reads the pipe as it fills), so it runs the file as bash did, ``bash -c :`` in the hook's
environment, and takes what that prints for what bash printed before the hook ran.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from typing import Final

__all__ = ["STARTUP_CHECK_S", "startup_noise"]

# how long the startup file may take to run again; past it, it is taken to print (the rewrite
# could not be shown to be readable)
STARTUP_CHECK_S: Final = 5.0
_SHOWN_CHARS: Final = 120


def startup_noise(env: Mapping[str, str]) -> str | None:
    """What bash prints before a command it runs with ``env`` (``BASH_ENV``'s file), described
    for a person, or ``None`` when it prints nothing (or ``BASH_ENV`` is not set).

    Example:
        >>> startup_noise({"PATH": "/usr/bin:/bin"}) is None
        True
    """
    path = env.get("BASH_ENV")
    if not path:
        return None
    # Codex runs /bin/bash itself
    bash = (
        "/bin/bash" if os.path.exists("/bin/bash") else (shutil.which("bash", path=env.get("PATH")))
    )
    named = f"the BASH_ENV file {path}"
    if bash is None:
        return f"{named} may print before the answer (no bash to check it with)"
    try:
        done = subprocess.run(
            [bash, "-c", ":"],
            env=dict(env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=STARTUP_CHECK_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"{named} may print before the answer (it ran over {STARTUP_CHECK_S:g} s)"
    except OSError as exc:
        return f"{named} may print before the answer (it could not be checked: {exc})"
    if not done.stdout:
        return None
    printed = done.stdout.decode("utf-8", "replace").strip()
    shown = printed[:_SHOWN_CHARS] + ("…" if len(printed) > _SHOWN_CHARS else "")
    return f"{named} prints before the answer ({shown!r})"
