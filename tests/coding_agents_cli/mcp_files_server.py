"""A stdio MCP server with one destructive tool, for the real-CLI guard tests.

``python mcp_files_server.py ROOT [NAME]``: ``delete_file {"path": ...}`` (or the tool ``NAME``:
``delete-file``, a name Codex CLI changes) deletes ``ROOT/path``, so a test sees whether the
call reached the server by whether the file is still there.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer

app = MCPServer("files")
ROOT = Path(sys.argv[1]) if len(sys.argv) > 1 else Path.cwd()
NAME = sys.argv[2] if len(sys.argv) > 2 else "delete_file"


@app.tool(name=NAME, structured_output=False)
def delete_file(path: str) -> str:
    """Delete a file under the project."""
    (ROOT / path).unlink()
    return f"deleted {path}"


if __name__ == "__main__":
    app.run()
