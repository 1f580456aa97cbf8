"""The bridge daemon runs an event's command hooks with the environment of the hook client that
sent it: real hook client processes, the real daemon the first starts.

The environment is the client's exactly: a variable the daemon's starter had and this client
lacks is unset, bytes that are not UTF-8 arrive as they were, and serve's admin token is still
withheld (``inherited_environment``, the one rule).
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.integrations._daemon_procs import bash, client_env, daemon_pid, hook, serving

GUARD = """\
hooks:
  - id: env
    type: PreToolUse
    command: >-
      printf '%s|%s|%s' "${ONLY_FIRST-unset}" "${WEIRD-unset}" "${OTELHOOKS_ADMIN_TOKEN-unset}"
      > "$CLAUDE_PROJECT_DIR/seen-$HOOK_TOOL_USE_ID"
"""


def test_a_daemon_runs_commands_with_the_sending_clients_environment(
    tmp_path: Path, runtime_dir: Path
) -> None:
    (tmp_path / "otelhooks.yaml").write_text(GUARD)
    env = client_env(tmp_path, runtime_dir, OTELHOOKS_ADMIN_TOKEN="s3cret")
    first = hook({**env, "ONLY_FIRST": "1"}, bash("t1", "ls", session="s1"))
    assert first.returncode == 0, first.stderr
    pid = daemon_pid(runtime_dir)
    weird = os.fsdecode(b"caf\xe9 \xc3\xa9 \xff")  # Latin-1, UTF-8 and a byte neither reads
    second = hook({**env, "WEIRD": weird}, bash("t2", "ls", session="s2"))
    assert second.returncode == 0, second.stderr
    assert serving(runtime_dir) == [pid]
    assert (tmp_path / "seen-t2").read_bytes() == b"unset|caf\xe9 \xc3\xa9 \xff|unset"
