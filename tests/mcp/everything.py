"""``@modelcontextprotocol/server-everything`` — the MCP project's reference server, from npm
(TypeScript SDK) — run as its users run it: over stdio, the command a gateway starts, or over
Streamable HTTP (``streamableHttp``, endpoint ``/mcp``). ``make install`` puts it beside the AI
SDK in ``tests/conformance/node_modules``."""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests import components
from tests.gateway_harness import free_port

ENTRY = (
    Path(__file__).resolve().parents[1]
    / "conformance/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
)
#: Seconds the server may take to listen.
START_TIMEOUT = 20.0


def require_everything() -> None:
    """Skip without Node or the package (fail under CI: ``make install`` provides both)."""
    why = None
    if shutil.which("node") is None:
        why = "node is not on PATH"
    elif not ENTRY.is_file():
        why = f"{ENTRY} is missing (run make install)"
    if why is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"server-everything: {why}")
        pytest.skip(f"server-everything: {why}")
    components.used("mcp")


def stdio(**more: Any) -> dict[str, Any]:
    """``tools`` for the gateway: the server over stdio, as ``everything``."""
    require_everything()
    return {"everything": {"command": "node", "args": [str(ENTRY), "stdio"], **more}}


@contextmanager
def running_http() -> Iterator[str]:
    """The server over Streamable HTTP on a free port: its endpoint's URL."""
    require_everything()
    port = free_port()
    env = {**os.environ, "PORT": str(port)}
    process = subprocess.Popen(
        ["node", str(ENTRY), "streamableHttp"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    drain: threading.Thread | None = None
    try:
        drain = _wait_listening(process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
        if drain is not None:
            drain.join(5)
        if process.stderr is not None:
            process.stderr.close()


def _wait_listening(process: subprocess.Popen[str]) -> threading.Thread:
    """Until the server says it listens (bounded); its later log lines are read and dropped, so
    that a full pipe never stops it."""
    assert process.stderr is not None
    stderr = process.stderr
    deadline = time.monotonic() + START_TIMEOUT
    seen: list[str] = []
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([stderr], [], [], left)
        line = stderr.readline() if ready else ""
        if not line and process.poll() is not None:
            break
        seen.append(line)
        if "listening on port" in line:
            drain = threading.Thread(target=stderr.read, daemon=True)
            drain.start()
            return drain
    raise AssertionError(f"server-everything did not listen: {''.join(seen)[-2000:]}")
