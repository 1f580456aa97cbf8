"""A stdio MCP server that breaks its stream, as no SDK server can be made to: it answers
``initialize``, then ``tools/call`` of ``flood`` with a line of ``megabytes`` MiB that never
ends, and of ``garble`` with an answer that is not UTF-8; either way it then stays alive
reading stdin (it exits at end of input). ``deaf`` makes it stop reading stdin for good, alive."""

from __future__ import annotations

import json
import os
import sys
import time


def main() -> None:
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        msg = json.loads(line)
        if msg.get("method") == "initialize":
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "broken", "version": "1"},
            }
            out.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode())
            out.write(b"\n")
        elif msg.get("method") == "tools/call":
            params = msg["params"]
            if params["name"] == "flood":
                chunk = b"x" * (1 << 20)
                for _ in range(params["arguments"]["megabytes"]):
                    out.write(chunk)
            elif params["name"] == "deaf":
                while True:
                    time.sleep(3600)
            elif params["name"] == "garble":
                head = b'{"jsonrpc":"2.0","id":' + json.dumps(msg["id"]).encode()
                out.write(head + b',"result":{"content":[{"type":"text","text":"\xff"}]}}\n')
        out.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
