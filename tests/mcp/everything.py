"""``@modelcontextprotocol/server-everything``, the TypeScript SDK's reference server (installed
under tests/conformance/node_modules by ``make install``): a third-party MCP server the tests
run as users do, over stdio or Streamable HTTP."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests import components
from tests.conftest import ROOT, require

#: The server's entry point; ``stdio`` or ``streamableHttp`` is its argument.
EVERYTHING = (
    ROOT / "tests/conformance/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
)


def everything_stdio(**more: Any) -> dict[str, Any]:
    """A tool server's settings: server-everything over stdio, with ``more`` of its settings
    (skipped locally, failed under CI, when Node or the package is missing)."""
    node = shutil.which("node")
    missing = None if EVERYTHING.exists() else f"{EVERYTHING} (make install)"
    require("server-everything", "node not on PATH" if node is None else missing)
    components.used("mcp")
    assert node is not None
    return {"command": node, "args": [str(EVERYTHING), "stdio"], **more}


def pids_of(script: Path | str, parent: int) -> list[int]:
    """The ids of ``parent``'s child processes running ``script``."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            command = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError):
            continue  # ended meanwhile
        if int(fields[1]) == parent and str(script).encode() in command:
            found.append(int(stat.parent.name))
    return found


@contextlib.contextmanager
def running_everything_http(seconds: float = 20) -> Iterator[str]:
    """server-everything over Streamable HTTP (MCP 2025-11-25) in a process of its own, at a
    free port; yields its endpoint's URL once the port takes connections."""
    node = everything_stdio()["command"]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "PORT": str(port)}
    command = [node, str(EVERYTHING), "streamableHttp"]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + seconds
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("server-everything did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


@contextlib.contextmanager
def everything_over(transport: str, **more: Any) -> Iterator[dict[str, Any]]:
    """A tool server's settings: server-everything over ``transport`` (``stdio``, or ``http``:
    a process of its own for the block), with ``more`` of its settings."""
    if transport == "stdio":
        yield everything_stdio(**more)
        return
    with running_everything_http() as url:
        yield {"url": url, **more}
