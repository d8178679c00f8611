"""A real MCP server (the ``mcp`` package's ``MCPServer``) for the tool tests: run as a script
it speaks stdio, or Streamable HTTP with ``--http`` (the one server a test worker shares, see
:func:`running_http`); :func:`build` gives it for a test's own Streamable HTTP server.

``slow`` notes its cancellation in the file named by ``CANCEL_MARK`` (or the path given to
:func:`build`), ``archive`` each run in ``CALL_LOG``: over HTTP the request's ``x-cancel-mark``
and ``x-call-log`` headers name them, so the tests sharing a server keep their notes apart; over
stdio the server is the test's own and its environment names them."""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

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


def noted(ctx: Context, name: str) -> str | None:
    """The file a call notes ``name`` in: its HTTP request's ``x-<name>`` header, else this
    process's environment variable ``NAME``."""
    request = ctx.request_context.request
    headers = getattr(request, "headers", None)
    header = headers.get("x-" + name) if headers is not None else None
    return header or os.environ.get(name.upper().replace("-", "_"))


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
    async def slow(seconds: float, ctx: Context) -> str:
        """Wait, then say done (notes its start — this process's id — beside the cancellation
        mark, and a cancellation in it)."""
        path = mark or noted(ctx, "cancel-mark")
        if path:
            Path(path + ".started").write_text(str(os.getpid()))  # noqa: ASYNC240 (no await)
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            if path:
                Path(path).write_text(str(time.time()))  # noqa: ASYNC240 (cancelled: no await)
            raise
        return "done"

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def env_of(variable: str) -> str:
        """A variable of this server's environment."""
        return os.environ.get(variable, "<unset>")

    @server.tool()
    def archive(name: str, ctx: Context) -> str:
        """Archive a report (destructive: asks first); notes each run in ``CALL_LOG``."""
        log = noted(ctx, "call-log")
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

    @server.tool(annotations=ToolAnnotations(idempotentHint=True))
    def request_meta(ctx: Context) -> dict[str, Any]:
        """The ``_meta`` of the call's request, as the server got it (an idempotent tool that
        is not read-only: what a gateway may run again, and what key it ran it with)."""
        return dict(ctx.request_context.meta or {})

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def big(size: int) -> str:
        """A long text."""
        return "é" * size

    return server


def serve_http(port: int = 0) -> None:
    """Streamable HTTP on 127.0.0.1 at ``port`` (0: one the kernel picks); the first line
    printed is the endpoint's URL, printed once the port takes connections."""
    import uvicorn

    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # the port of a killed server
    sock.bind(("127.0.0.1", port))
    sock.listen(128)  # connections wait in the backlog until uvicorn has started
    print(f"http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    app = build().streamable_http_app()
    uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="on")).run(sockets=[sock])


def start_http(seconds: float = 20, port: int = 0) -> tuple[subprocess.Popen[str], str]:
    """This server over Streamable HTTP in a process of its own (at ``port``, 0: any): the
    process, and its endpoint's URL once it takes connections."""
    command = [sys.executable, __file__, "--http", str(port)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    if not select.select([proc.stdout], [], [], seconds)[0]:
        proc.kill()
        raise RuntimeError(f"the MCP test server said nothing in {seconds} s")
    url = proc.stdout.readline().strip()
    if not url.startswith("http://"):
        proc.kill()
        raise RuntimeError(f"the MCP test server did not start: {url!r}")
    return proc, url


@contextlib.contextmanager
def running_http(seconds: float = 20, port: int = 0) -> Iterator[str]:
    """:func:`start_http`, stopped at the end; yields the endpoint's URL."""
    proc, url = start_http(seconds, port)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--http"]:
        serve_http(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
    else:
        build(name=sys.argv[1] if len(sys.argv) > 1 else "probe").run("stdio")
