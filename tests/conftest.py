"""Shared fixtures. Components a test needs (Node + the pinned ai packages, a browser) are
skipped when missing on a developer machine, and fail the run under CI (``CI=true``)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Generator
from pathlib import Path

import pytest
import uvloop

from tests.conformance.harness import RealClients, unavailable_reason

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
ROOT = Path(__file__).resolve().parents[1]
#: Where each folder of the repository goes in the installed package.
PACKAGE_DIRS = {
    "src/chunkbridge": "",
    "translators/kit": "kit",
    "translators": "translators",
    "gateway": "gateway",
    "protocol_specs": "protocol_specs",
}


def pytest_sessionstart(session: pytest.Session) -> None:
    """A module added since ``make install`` is missing from the strict editable install's link
    tree, and its import would fail deep inside some test: say so once, up front."""
    import chunkbridge

    installed = Path(chunkbridge.__file__).parent
    if not installed.joinpath("__init__.py").is_symlink():
        return  # a regular install: no link tree to be stale
    missing = []
    for folder, package in PACKAGE_DIRS.items():
        for module in (ROOT / folder).rglob("*.py"):
            relative = module.relative_to(ROOT / folder)
            if folder == "translators" and relative.parts[0] == "kit":
                continue
            if not installed.joinpath(package, relative).exists():
                missing.append(str(module.relative_to(ROOT)))
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
