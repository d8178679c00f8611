"""A small MCP server for the mcp-agent example, built with the official ``mcp`` package: two
read-only tools the gateway runs at once, and one that changes something, which waits for the
user's approval. It speaks stdio: the gateway starts it (``[tools.calculator]`` in agent.toml).
"""

from __future__ import annotations

import os
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("calculator")
NOTES = Path(os.environ.get("NOTES_FILE", "notes.txt"))


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def multiply(a: float, b: float) -> float:
    """Multiply two numbers."""
    return a * b


@server.tool()
def save_note(text: str) -> str:
    """Append a line to the notes file (changes a file: the user approves it first)."""
    with NOTES.open("a") as notes:
        notes.write(text + "\n")
    return f"saved to {NOTES}"


if __name__ == "__main__":
    server.run("stdio")
