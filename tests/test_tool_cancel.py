"""A cancelled call over Streamable HTTP — a Stop, a timeout — closes its response stream at once:
no progress of the server reaches the gateway after it, and its connection is free. On MCP
2026-07-28 (our test server) the SDK aborts the POST; on 2025-11-25 (server-everything) the
transport closes the stream the ``notifications/cancelled`` names."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

from chunkbridge.gateway.tool_settings import ToolServerSettings
from chunkbridge.gateway.tools.mcp_source import McpToolSource
from chunkbridge.gateway.transports.http_connection import HttpConnection
from tests.mcp.everything import running_everything_http

#: Seconds the test watches the connections after the cancel.
WATCH = 1.0


class Wire:
    """Every read of the gateway's HTTP connections: (when, connection, bytes)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.reads: list[tuple[float, HttpConnection, bytes]] = []
        received = HttpConnection.data_received

        def data_received(shell: HttpConnection, data: bytes) -> None:
            self.reads.append((time.monotonic(), shell, bytes(data)))
            received(shell, data)

        monkeypatch.setattr(HttpConnection, "data_received", data_received)

    def progress(self, since: float = 0.0) -> list[HttpConnection]:
        """The connections that brought progress notifications after ``since``."""
        return [s for t, s, d in self.reads if t > since and b"notifications/progress" in d]


@pytest.fixture
def everything_url() -> Iterator[str]:
    with running_everything_http() as url:
        yield url


CALLS = {
    "ours": ("count", {"to": 200, "pause": 0.05}),
    "everything": ("trigger-long-running-operation", {"duration": 20, "steps": 200}),
}


async def cancelled_call(source: McpToolSource, server: str, by: str) -> float:
    """Start the server's long call, cancel it after its third progress report (a Stop cancels
    the task; a timeout cancels inside it); when it was cancelled."""
    tool, arguments = CALLS[server]
    reports: list[dict[str, Any]] = []
    running = asyncio.create_task(source.call(tool, arguments, reports.append))
    for _ in range(200):
        if len(reports) >= 3:
            break
        await asyncio.sleep(0.02)
    assert len(reports) >= 3, "no progress from the server"
    if by == "stop":
        running.cancel()
        cancelled = time.monotonic()
        with pytest.raises(asyncio.CancelledError):
            await running
        return cancelled
    outcome = await running  # the short tool_timeout of the settings below ran out
    assert outcome.error is not None and "took longer than" in outcome.error
    return time.monotonic()


@pytest.mark.parametrize("by", ["stop", "timeout"])
@pytest.mark.parametrize("server", ["ours", "everything"])
async def test_a_cancelled_calls_stream_closes_at_once(
    server: str, by: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    if server == "ours":
        url = request.getfixturevalue("tool_server").url
        expected_protocol = "2026-07-28"
    else:
        url = request.getfixturevalue("everything_url")
        expected_protocol = "2025-11-25"
    wire = Wire(monkeypatch)
    timeout = 0.5 if by == "timeout" else 60.0
    source = McpToolSource(server, ToolServerSettings(url=url, tool_timeout=timeout))
    await source.start()
    try:
        assert source._client.protocol_version == expected_protocol
        cancelled = await cancelled_call(source, server, by)
        (streaming,) = set(wire.progress())  # the call's response stream
        await asyncio.sleep(WATCH)
        late = wire.progress(since=cancelled + 0.2)  # what was on its way may still land
        assert late == [], f"{len(late)} progress reads after the cancel"
        assert streaming.lost.done(), "the call's connection is still open"
        again = await source.call("get-sum" if server == "everything" else "add", {"a": 1, "b": 2})
        assert again.error is None, again  # the connection's other streams are untouched
    finally:
        await source.aclose()
