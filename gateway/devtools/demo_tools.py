"""The demo's MCP server (``chunkbridge demo --agent``), built with the official ``mcp`` package
and started by the gateway over stdio like any configured tool server: a few tools that show
what the agent loop does — read-only tools run at once (several in one step run side by side),
``save_note`` changes something and asks first, ``count_slowly`` reports its progress and
takes long enough to be stopped. It needs no network: the weather is made up.

Run it alone with ``python -m chunkbridge.gateway.devtools.demo_tools`` (it speaks stdio).
"""

from __future__ import annotations

import asyncio
import zlib

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

__all__ = ["server"]

server = MCPServer("chunkbridge-demo")
READ_ONLY = ToolAnnotations(readOnlyHint=True)
#: The notes saved in this run of the server (the demo keeps no files).
NOTES: list[str] = []
SKIES = ("sunny", "cloudy", "light rain", "windy", "clear")


@server.tool(annotations=READ_ONLY)
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


@server.tool(annotations=READ_ONLY)
def multiply(a: float, b: float) -> float:
    """Multiply two numbers."""
    return a * b


@server.tool(annotations=READ_ONLY)
def weather(city: str) -> dict[str, object]:
    """Today's weather in a city (made up: the demo has no network)."""
    seed = zlib.crc32(city.lower().encode())
    return {"city": city, "celsius": 5 + seed % 22, "sky": SKIES[seed % len(SKIES)]}


@server.tool(annotations=READ_ONLY)
async def count_slowly(to: int, ctx: Context) -> str:
    """Count to a number, one a second, each reported as progress (long enough to press Stop)."""
    last = max(0, min(to, 60))
    for number in range(1, last + 1):
        await asyncio.sleep(1)
        await ctx.report_progress(number, last, f"{number} of {last}")
    return f"counted to {last}"


@server.tool()
def save_note(text: str) -> str:
    """Keep a note (it changes something: the user approves it first)."""
    NOTES.append(text)
    return f"note {len(NOTES)} saved"


if __name__ == "__main__":
    server.run("stdio")
