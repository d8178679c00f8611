"""A real MCP server (the ``mcp`` package's ``MCPServer``, over stdio) for the durable-turn
tests: two slow tools that note every execution — when it starts and when it ends, for which
session, with the call's idempotency key (``_meta["io.chunkbridge/idempotency-key"]``) — in
the file named by ``DURABLE_LOG``. ``lookup`` is read-only (a takeover may run it again);
``charge`` is neither read-only nor idempotent (it must never run twice). ``DURABLE_SLOW``:
seconds each takes."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

KEY = "io.chunkbridge/idempotency-key"


def _note(event: str, tool: str, session: str, ctx: Context) -> None:
    meta = ctx.request_context.meta or {}
    key = meta.get(KEY) if isinstance(meta, dict) else getattr(meta, KEY, None)
    with Path(os.environ["DURABLE_LOG"]).open("a") as log:
        log.write(f"{event} {tool} {session} {key} {time.time()}\n")


async def _slow(tool: str, session: str, ctx: Context) -> None:
    _note("start", tool, session, ctx)
    await asyncio.sleep(float(os.environ.get("DURABLE_SLOW", "1.5")))
    _note("end", tool, session, ctx)


def build() -> MCPServer:
    server = MCPServer("durable")

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    async def lookup(query: str, ctx: Context) -> str:
        """Look ``query`` up (slowly; read-only)."""
        await _slow("lookup", query, ctx)
        return f"{query}: found"

    @server.tool()
    async def charge(session: str, ctx: Context) -> str:
        """Charge the order of ``session`` (slowly; not idempotent: never twice)."""
        await _slow("charge", session, ctx)
        return f"charged {session}"

    return server


if __name__ == "__main__":
    build().run("stdio")
