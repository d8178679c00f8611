"""Which real components each test ran, counted at the end of the session.

The suite's promise is that speed never costs a real-client check: the summary line
``real components: …`` says how many tests ran the real AI SDK clients, Chromium, redis-server,
PostgreSQL and real MCP servers, so a change to the suite's plumbing (a shared server, a
long-lived Node process, a worker more) shows at once whether one of them stopped being run.

A test counts as using a component when, during its set-up or call, a process of that
component was started (Python's ``subprocess.Popen`` audit event, so a server the gateway under
test starts is seen too) or a shared instance was handed to it (:func:`used`, called by the
fixtures and helpers that share one). Counts travel in each report's ``user_properties``, so
they add up across pytest-xdist's workers.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Generator, Iterable
from pathlib import PurePath

import pytest

#: The components, in the order the summary names them.
COMPONENTS = {
    "ai-sdk": "the real AI SDK clients",
    "chromium": "Chromium",
    "redis": "redis-server",
    "postgres": "PostgreSQL",
    "mcp": "real MCP servers",
}
PROPERTY = "chunkbridge.component"

#: Scripts under tests/conformance that drive the real AI SDK (``pi_upstream.mjs`` is an
#: upstream, not a client); the example's browser scripts drive Chromium.
_NODE_SCRIPTS = {
    "check.mjs": "ai-sdk",
    "chat_loop.mjs": "ai-sdk",
    "provider_diff.mjs": "ai-sdk",
    "agent_loop.mjs": "ai-sdk",
    "ws_client.mjs": "ai-sdk",
    "sign_approval.mjs": "ai-sdk",
    "oracle.mjs": "ai-sdk",
    "run.mjs": "chromium",
}
_PROGRAMS = {
    "redis-server": "redis",
    "initdb": "postgres",
    "pg_ctl": "postgres",
    "postgres": "postgres",
}

_current: pytest.Item | None = None


def used(component: str) -> None:
    """Count ``component`` for the test running now (nothing outside a test)."""
    assert component in COMPONENTS, component
    if _current is not None and (PROPERTY, component) not in _current.user_properties:
        _current.user_properties.append((PROPERTY, component))


def _classify(argv: Iterable[object]) -> str | None:
    names = [PurePath(os.fsdecode(a)).name if isinstance(a, str | bytes) else "" for a in argv]
    if not names:
        return None
    if names[0] in _PROGRAMS:
        return _PROGRAMS[names[0]]
    if names[0] == "node":
        return next((_NODE_SCRIPTS[n] for n in names[1:] if n in _NODE_SCRIPTS), None)
    if "tools_server.py" in names or any(n.startswith("mcp-server") for n in names):
        return "mcp"
    return None


def _audit(event: str, args: tuple[object, ...]) -> None:
    if event == "subprocess.Popen" and _current is not None:
        argv = args[1]
        argv = argv if isinstance(argv, list | tuple) else [argv]
        component = _classify(argv)
        if component is not None:
            used(component)


sys.addaudithook(_audit)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _running(item))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _running(item))


def _running(item: pytest.Item) -> Generator[None, object, object]:
    """Count for ``item`` during its set-up and call; not during tear-down, where a shared
    server's shutdown (``pg_ctl stop``) would be counted to whichever test ran last."""
    global _current
    _current = item
    try:
        return (yield)
    finally:
        _current = None


class Tally:
    """The controller's side: each test's components, from its tear-down report."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "teardown":
            for name, component in report.user_properties:
                if name == PROPERTY:
                    self.counts[str(component)] += 1

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        listed = ", ".join(f"{COMPONENTS[c]} {self.counts[c]}" for c in COMPONENTS)
        terminalreporter.write_line(f"real components (tests using each): {listed}")
