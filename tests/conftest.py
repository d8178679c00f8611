"""Shared fixtures. Components a test needs (Node + the pinned ai packages, a browser) are
skipped when missing on a developer machine, and fail the run under CI (``CI=true``)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tomllib
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import uvloop

from tests import components
from tests.conformance.harness import RealClients, unavailable_reason
from tests.postgres_server import fresh_database, postgres_binaries, running_postgres
from tests.redis_server import flush_redis, redis_binary, running_redis

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
ROOT = Path(__file__).resolve().parents[1]


def package_files() -> dict[str, Path]:
    """Every module of the package by its path in the installed package (``chunkbridge/kit/
    dialect.py``), from ``pyproject.toml``'s package directories: the longest mapped folder
    holding a file decides where it goes (``translators/kit/`` is ``chunkbridge/kit/``)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {
        Path(folder): package.replace(".", "/") for package, folder in config["package-dir"].items()
    }
    out: dict[str, Path] = {}
    for folder, package in folders.items():
        for module in (ROOT / folder).rglob("*.py"):
            owner = max(
                (f for f in folders if module.is_relative_to(ROOT / f)), key=lambda f: len(f.parts)
            )
            if owner == folder:
                out[f"{package}/{module.relative_to(ROOT / folder).as_posix()}"] = module
    return out


def pytest_configure(config: pytest.Config) -> None:
    """Count the real components each test runs (:mod:`tests.components`); the controller of a
    pytest-xdist run adds up its workers' counts."""
    config.pluginmanager.register(components, "chunkbridge-components")
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(components.Tally(), "chunkbridge-components-tally")


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker more than the cores. Much of a test's time is spent waiting on the
    servers, browsers and Node clients it drives, which a worker per core would leave idle; twice
    as many oversubscribe the cores when the heavy files start together, and a process that must
    start in a bounded time (a gateway, its MCP server) then may not. ``-n 0`` runs in this
    process; ``PYTEST_XDIST_AUTO_NUM_WORKERS`` overrides the count."""
    return (os.cpu_count() or 1) + 1


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Files with a ``slow`` or ``e2e`` test first. pytest-xdist hands out whole files
    (``--dist loadfile``) in this order: a long file started last would keep one worker busy
    while the others wait at the end."""
    slow = {
        item.path
        for item in items
        if item.get_closest_marker("slow") or item.get_closest_marker("e2e")
    }
    items.sort(key=lambda item: item.path not in slow)


def pytest_sessionstart(session: pytest.Session) -> None:
    """A module added since ``make install`` is missing from the strict editable install's link
    tree, and its import would fail deep inside some test: say so once, up front."""
    import chunkbridge

    installed = Path(chunkbridge.__file__).parent
    if not installed.joinpath("__init__.py").is_symlink():
        return  # a regular install: no link tree to be stale
    missing = [
        str(module.relative_to(ROOT))
        for name, module in package_files().items()
        if not installed.parent.joinpath(name).exists()
    ]
    if missing:
        listed = ", ".join(sorted(missing)[:5]) + (" …" if len(missing) > 5 else "")
        pytest.exit(f"the editable install predates {listed}: run `make install`", returncode=4)


def require(component: str, reason: str | None) -> None:
    """Skip (locally) or fail (CI) when ``reason`` says a component is missing."""
    if reason is None:
        return
    message = f"{component} unavailable: {reason}"
    if IN_CI:
        pytest.fail(message + " (CI=true: missing components fail the run)")
    pytest.skip(message)


@pytest.fixture(scope="session")
def real_clients() -> RealClients:
    """The real AI SDK 5, 6 and 7 clients (tests/conformance/check.mjs)."""
    require("real AI SDK clients", unavailable_reason())
    return RealClients()


def require_redis() -> None:
    require(
        "redis-server", None if redis_binary() else "not installed (apt-get install redis-server)"
    )


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A redis-server of this test's own, for a test that stops or kills it: (its URL, its
    process)."""
    require_redis()
    with running_redis(tmp_path) as server:
        components.used("redis")
        yield server


@pytest.fixture(scope="session")
def shared_redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The worker's one redis-server, for the tests that only use it."""
    require_redis()
    with running_redis(tmp_path_factory.mktemp("redis")) as (url, _):
        yield url


@pytest.fixture
def redis_url(shared_redis_url: str) -> str:
    """A redis-server emptied for this test: the worker's shared one, flushed first."""
    flush_redis(shared_redis_url)
    components.used("redis")
    return shared_redis_url


@pytest.fixture(scope="session")
def shared_postgres() -> Iterator[str]:
    """The worker's one PostgreSQL cluster (the machine's initdb and pg_ctl)."""
    require("postgresql", None if postgres_binaries() else "initdb/pg_ctl not installed")
    with running_postgres() as (url, _):
        yield url


@pytest.fixture
def postgres_url(shared_postgres: str) -> str:
    """A database of this test's own, made afresh on the worker's cluster."""
    fresh_database(shared_postgres)
    components.used("postgres")
    return shared_postgres


#: The MCP test server; run as a script it speaks stdio.
TOOLS_SERVER = str(ROOT / "tests" / "mcp" / "tools_server.py")


def stdio_tools(**more: Any) -> dict[str, Any]:
    """``tools`` for the gateway: the MCP test server over stdio (a process of the test's own,
    where the transport is the point), as ``math``, with ``more`` of its settings."""
    return {"math": {"command": sys.executable, "args": [TOOLS_SERVER], **more}}


@pytest.fixture(scope="session")
def shared_tool_server_url() -> Iterator[str]:
    """The worker's one MCP test server over Streamable HTTP (``tests/mcp/tools_server.py``)."""
    from tests.mcp.tools_server import running_http

    with running_http() as url:
        yield url


@dataclass(frozen=True)
class ToolServer:
    """The shared MCP test server as one test sees it: its notes (``archive``'s runs, ``slow``'s
    cancellation) go to files of the test's own, named in headers the gateway sends."""

    url: str
    folder: Path

    @property
    def cancel_mark(self) -> Path:
        return self.folder / "cancelled"

    def calls(self) -> list[str]:
        """The reports ``archive`` archived, in order."""
        log = self.folder / "calls"
        return log.read_text().split() if log.exists() else []

    def settings(self, **more: Any) -> dict[str, Any]:
        """``tools`` for the gateway: the server, as ``math``, with ``more`` of its settings."""
        notes = {"x-call-log": str(self.folder / "calls"), "x-cancel-mark": str(self.cancel_mark)}
        return {"math": {"url": self.url, "headers": notes, **more}}


@pytest.fixture
def tool_server(shared_tool_server_url: str, tmp_path: Path) -> ToolServer:
    """A real MCP server for a test that needs none of its own: the worker's shared one (a
    process started once), where a stdio server would cost this test a Python start-up."""
    components.used("mcp")
    return ToolServer(shared_tool_server_url, tmp_path)


def pytest_asyncio_loop_factories(config: pytest.Config, item: pytest.Item):
    """asyncio's loop for every test; uvloop as well for tests marked ``both_loops`` (code that
    depends on how the loop orders socket reads and due callbacks)."""
    if item.get_closest_marker("both_loops") is not None:
        return {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}
    return {"asyncio": asyncio.new_event_loop}


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Generator[None, object, object]:
    """A plain (sync) test gets an event loop of its own, closed after it. looptime's hook asks
    the policy for the current loop around every test; in a sync test that makes asyncio create
    one nobody closes, and its ResourceWarning fires later, in whichever test the garbage
    collector happens to run (an error under ``filterwarnings = error``)."""
    if pyfuncitem.get_closest_marker("asyncio") is not None:  # pytest-asyncio's own loop
        return (yield)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        return (yield)
    finally:
        asyncio.set_event_loop(None)
        loop.close()
