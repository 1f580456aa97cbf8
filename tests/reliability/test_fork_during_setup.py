"""A fork while one of our threads sets up the process's first HTTP client or request must leave
the child able to deliver: OpenSSL initialising itself (the first TLS context; httpx makes one for
every client, plain-HTTP ones too) and first imports (importlib's per-module locks) hold locks
the child inherits held, with no thread to release them. A forked worker's queued webhooks stayed
leased and undelivered that way (CI: 74 of 75 delivered, in
test_export_losses.py::test_an_outbox_shared_with_forked_children_delivers_each_row_once)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests._webhook_server import webhook_server

# The parent's first tool call sends a webhook (its first client and request, on the webhook
# thread) while the main thread forks a child every 2 ms until that delivery is done, so some
# fork falls in its setup however fast this machine is. Each child sends one of its own, and
# makes a bare TLS context; SIGALRM kills it when either waits.
_FORK_DURING_FIRST_DELIVERY = """
import os, signal, ssl
import otelhooks

oh = otelhooks.configure(set_global=False, structured_logging=False)
oh.register([{{"id": "w", "type": "afterToolCall", "webhook": {{"url": "{url}"}}}}])

def call(n):
    with oh.operation("fork") as op, op.step() as step:
        step.run_tool("calc", "add", {{"n": n}}, lambda n: "ok")

call(0)
children = []
while not oh.webhooks.flush(0.002) and len(children) < 100:
    pid = os.fork()
    if pid == 0:
        signal.alarm(8)
        ssl.create_default_context()
        call(1)
        os._exit(0 if oh.shutdown(timeout_s=5.0, log=False).ok else 3)
    children.append(pid)
ends = [os.waitpid(pid, 0)[1] for pid in children]
hung = sum(os.WIFSIGNALED(end) for end in ends)
undelivered = sum(not os.WIFSIGNALED(end) and os.WEXITSTATUS(end) != 0 for end in ends)
print(len(children), hung, undelivered, oh.shutdown(timeout_s=5.0, log=False).ok)
"""


def test_a_child_forked_during_the_first_delivery_delivers_its_own(tmp_path: Path) -> None:
    with webhook_server() as server:
        script = tmp_path / "fork.py"
        script.write_text(_FORK_DURING_FIRST_DELIVERY.format(url=server.url + "/w"))
        done = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, timeout=90
        )
        delivered = len(server.requests("/w"))
    assert done.returncode == 0, done.stderr
    children, hung, undelivered, parent_ok = done.stdout.split()
    assert int(children) > 0  # the first delivery took a few ms at least
    assert (hung, undelivered, parent_ok) == ("0", "0", "True")
    assert delivered == 1 + int(children)
