"""The starter hook file that ``otelhooks init`` (and the Claude Code installer) write.

One text, so both commands hand a new user the same commented file: a guard that denies
``rm -rf`` (an intercept hook), an observer that logs each tool result, and a budget guard and
a notification webhook left commented out. It uses only shell commands, so it loads and runs
without any Python module of the user's, in the demo's runtime as in Claude Code.
"""

from __future__ import annotations

__all__ = ["STARTER_FILE_NAME", "starter_hooks_yaml"]

STARTER_FILE_NAME = "hooks.yaml"

_STARTER = """\
# otelhooks starter hooks: edit freely, then check with `otelhooks validate {name}`.
#
# Each hook has an `id`, the event it fires on (`type`: a name from any of the four dialects;
# `otelhooks events` lists them all), an optional `matcher` (which tools), and one action:
# `command` (a shell command), `handler` (a Python function, `module:function`; a module
# beside this file imports), `script` (`file.py:function`), `webhook` or `plugin`.
#
# An intercept hook runs before the action and can change or stop it (deny or mock a tool
# call, rewrite a message); an observer runs after the fact, off the agent's thread, and can
# change nothing.
hooks:
  # Intercept: deny any tool call whose arguments contain `rm -rf`. A command hook gets the
  # whole event as JSON on stdin, read here with `cat` (the arguments are also in
  # $HOOK_TOOL_INPUT, but over 64 KiB only as a marker: a padded `rm -rf` would pass a guard
  # reading that); exit 2 with a reason on stderr denies it, as a Claude Code hook does. Exit 0
  # lets the call run.
  - id: no-rm-rf
    type: PreToolUse          # the same event as beforeToolCall and before_tool_call
    matcher: "*"              # every tool; "Bash", "Edit|Write" or a regex narrow it
    command: |
      case "$(cat)" in
        *"rm -rf"*|*"rm -fr"*) echo "rm -rf is not allowed" >&2; exit 2 ;;
      esac
    timeout: 5                # seconds; a guard that cannot answer in time is ignored
    # on_error: block         # ...unless this line is on: then it denies instead

  # Observer: append one line per finished tool call to otelhooks-tools.log in the temporary
  # folder. It runs after the call, in the background: the agent never waits for it.
  - id: log-tools
    type: PostToolUse         # = afterToolCall = after_tool_call
    matcher: "*"
    command: 'echo "$HOOK_TRIGGERED_AT $HOOK_TOOL_NAME" >> "${{TMPDIR:-/tmp}}/otelhooks-tools.log"'

  # Budget guard: once a run has spent $0.50 on model calls (priced with genai-prices, the
  # `cost` extra), deny its tool calls and refuse its model calls. Uncomment it to use it.
  # - {{id: spend-cap, type: beforeToolCall, budget: {{operation_usd: 0.50}}}}

  # Notification webhook: POST a JSON body each time a run completes. Uncomment it and set
  # the URL; deliveries are queued and retried in the background.
  # - id: notify-done
  #   type: onComplete
  #   webhook:
  #     url: "http://127.0.0.1:8080/hooks"
  #     timeout: 5
"""


def starter_hooks_yaml(name: str = "THIS-FILE") -> str:
    """The commented starter hook file (YAML); its first line names it ``name`` (the path a
    user would pass to ``otelhooks validate``).

    Example:
        >>> from otelhooks._starter import starter_hooks_yaml
        >>> "id: no-rm-rf" in starter_hooks_yaml()
        True
    """
    return _STARTER.format(name=name)
