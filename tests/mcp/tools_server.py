"""A real MCP server (the ``mcp`` package's ``MCPServer``) for the tool tests: run as a script
it speaks stdio; :func:`build` gives it for Streamable HTTP. ``slow`` notes its cancellation in
the file named by ``$CANCEL_MARK`` (or the path given to :func:`build`), ``archive`` each run
in ``$CALL_LOG``."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp.types import ToolAnnotations
from pydantic import BaseModel


class NewName(BaseModel):
    name: str


class Folder(BaseModel):
    folder: str


def ask_new_name(file: str) -> Elicit[NewName]:
    """``rename`` asks the user (MCP 2026-07-28: an input request of the call's result)."""
    return Elicit(f"New name for {file}?", NewName)


def ask_folder(file: str) -> Elicit[Folder]:
    return Elicit(f"Which folder for {file}?", Folder)


def build(mark: str | None = None, name: str = "probe") -> MCPServer:
    server = MCPServer(name)

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def multiply(a: int, b: int) -> int:
        """Multiply two numbers."""
        return a * b

    @server.tool()
    async def slow(seconds: float) -> str:
        """Wait, then say done (notes a cancellation)."""
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            path = mark or os.environ.get("CANCEL_MARK")
            if path:
                Path(path).write_text(str(time.time()))  # noqa: ASYNC240 (cancelled: no await)
            raise
        return "done"

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def env_of(variable: str) -> str:
        """A variable of this server's environment."""
        return os.environ.get(variable, "<unset>")

    @server.tool()
    def archive(name: str) -> str:
        """Archive a report (destructive: asks first); notes each run in ``$CALL_LOG``."""
        log = os.environ.get("CALL_LOG")
        if log:
            with open(log, "a") as file:
                file.write(name + "\n")
        return f"archived {name}"

    @server.tool()
    def delete_branch(branch: str) -> str:
        """Delete a branch (destructive)."""
        raise ToolError(f"branch {branch} is protected")

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    async def learn(name: str, ctx: Context) -> str:
        """Learn a new tool called ``name`` and tell the client the tool list changed."""

        def learned() -> str:
            return f"{name} ran"

        server.add_tool(learned, name=name, annotations=ToolAnnotations(readOnlyHint=True))
        await ctx.notify_tools_changed()
        return f"learned {name}"

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    async def count(to: int, pause: float, ctx: Context) -> str:
        """Count to ``to``, each number reported as progress, ``pause`` seconds apart."""
        for number in range(1, to + 1):
            await ctx.report_progress(number, to, f"at {number}")
            await asyncio.sleep(pause)
        return f"counted to {to}"

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    async def rename(file: str, new: Annotated[NewName, Resolve(ask_new_name)]) -> str:
        """Rename a file; the new name is asked of the user."""
        return f"renamed {file} to {new.name}"

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    async def move(
        file: str,
        new: Annotated[NewName, Resolve(ask_new_name)],
        folder: Annotated[Folder, Resolve(ask_folder)],
    ) -> str:
        """Move a file: two questions, asked together (the gateway asks one at a time)."""
        return f"moved {file} to {folder.folder}/{new.name}"

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def traced(ctx: Context) -> str:
        """The W3C ``traceparent`` the call's ``_meta`` carried (``<none>``)."""
        meta = ctx.request_context.meta
        value = meta.get("traceparent") if isinstance(meta, dict) else None
        return str(value or "<none>")

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def big(size: int) -> str:
        """A long text."""
        return "é" * size

    return server


if __name__ == "__main__":
    build(name=sys.argv[1] if len(sys.argv) > 1 else "probe").run("stdio")
