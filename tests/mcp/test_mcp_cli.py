"""``otelhooks mcp`` refuses a bad command line before it starts anything (exit 2, one line on
stderr, nothing on stdout: stdout belongs to the protocol)."""

from __future__ import annotations

import pytest

from otelhooks.testing import run_cli


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["mcp"], "no server command"),
        (["mcp", "--listen", "127.0.0.1:9"], "--listen and --upstream go together"),
        (["mcp", "--listen", "nowhere", "--upstream", "http://127.0.0.1:9/mcp"], "HOST:PORT"),
        (
            ["mcp", "--listen", "127.0.0.1:9", "--upstream", "http://x/mcp", "--", "srv"],
            "either a server command",
        ),
        (
            ["mcp", "--header", "Authorization: Bearer ${HOME}", "--", "srv"],
            "not an allowed env var",
        ),
        (["mcp", "--hooks", "/nonexistent/hooks.yaml", "--", "srv"], "hooks.yaml"),
    ],
)
def test_bad_command_lines_exit_2_with_the_reason(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli(*argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert message in err
