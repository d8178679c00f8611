"""``@modelcontextprotocol/server-everything``, the TypeScript SDK's reference server (installed
under tests/conformance/node_modules by ``make install``): a third-party MCP server the tests
run as users do, over stdio."""

from __future__ import annotations

import shutil
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
