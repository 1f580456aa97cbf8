"""The starter hook file: what ``otelhooks claude-code install`` writes on a project without one.

A guard (deny a shell command holding ``rm -rf``), an observer, and a notification webhook left
commented out; it validates as is (``otelhooks validate``).
"""

from __future__ import annotations

__all__ = ["starter_hooks_yaml"]

_STARTER = """\
# otelhooks hooks. Claude Code runs them through `otelhooks claude-code install`'s entries;
# `otelhooks demo --hooks FILE` runs them on the demo agent.
#   check it:  otelhooks validate FILE
#   try it:    otelhooks hooks test FILE --event PreToolUse --tool Bash \\
#                --args '{"command": "rm -rf /"}'
#   see it:    otelhooks claude-code tree      (the spans of your Claude Code sessions)
# Formats and every option: docs/config-formats.md
hooks:
  # A guard: the event JSON arrives on stdin; exit 2 with a reason on stderr denies the call.
  - id: no-rm-rf
    type: PreToolUse
    matcher: Bash
    command: >-
      if grep -q 'rm -rf'; then echo 'rm -rf is not allowed here' >&2; exit 2; fi

  # An observer: runs after each tool call, in the background; it never delays the agent.
  # Replace `cat` with your own command (the event JSON is on its stdin).
  - id: audit-tools
    type: PostToolUse
    matcher: "*"
    command: cat > /dev/null

  # A notification webhook: uncomment and set your URL.
  # - id: notify
  #   type: PostToolUse
  #   matcher: "*"
  #   webhook: {url: "http://127.0.0.1:8080/hooks", timeout: 5}
"""


def starter_hooks_yaml() -> str:
    """The text of the starter hook file (YAML, commented; validates as is).

    Example:
        >>> "no-rm-rf" in starter_hooks_yaml()
        True
    """
    return _STARTER
