"""The test server of ``mcp_server_app.py`` answering each POST with one JSON body (the SDK's
``json_response``) instead of a stream of server-sent events.

``python json_server.py http PORT``.
"""

from __future__ import annotations

import sys

from mcp_server_app import app

if __name__ == "__main__":
    app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]), json_response=True)
