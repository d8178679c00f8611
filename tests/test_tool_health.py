"""A tool server that goes down — a stdio server killed, an HTTP server that stops answering — is
marked down (``tools.server_down``, the metrics), its tools leave the catalog, a call on it ends
with an error that says so, and it is started or connected again; back up, its tools return.

The kills are SIGKILL at a point drawn from a seed the test prints (``-s`` shows it)."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from structlog.testing import capture_logs

from chunkbridge.gateway.tool_settings import ToolServerSettings
from chunkbridge.gateway.tools import ToolSources
from tests.agent_responses import answer
from tests.conftest import stdio_tools
from tests.gateway_harness import http_upstream, post, running_gateway, user_body
from tests.helpers import result_of
from tests.mcp.everything import EVERYTHING, everything_stdio, pids_of
from tests.mcp.tools_server import start_http
from tests.test_agent_loop import Model, parts_of
from tests.test_tool_sources import wait_for


def seeded() -> random.Random:
    seed = random.randrange(2**32)
    print(f"kill point seed: {seed}")
    return random.Random(seed)


class Catalogs:
    """Each catalog size the sources' ``on_change`` reported, in order, to wait on."""

    def __init__(self, sources: ToolSources) -> None:
        self.sizes: asyncio.Queue[int] = asyncio.Queue()
        offer = sources.on_change

        def changed() -> None:
            offer()
            self.sizes.put_nowait(len(sources.catalog))

        sources.on_change = changed

    async def next(self, seconds: float = 5.0) -> int:
        return await asyncio.wait_for(self.sizes.get(), seconds)


def events(logs: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [entry for entry in logs if entry["event"] == name]


KILLED_TURN: list[tuple[str, list[Any]]] = [
    ("Waiting.", [("call_slow", "slow", {"seconds": 30})]),
    ("The server went away.", []),
    ("Adding.", [("call_add", "add", {"a": 1, "b": 2})]),
    ("3.", []),
]


async def test_a_stdio_server_killed_mid_call_errors_the_call_and_is_started_again(
    tmp_path: Path, real_clients: Any
) -> None:
    rng = seeded()
    mark = tmp_path / "cancelled"
    model = Model(lambda n, body: answer("anthropic-messages", *KILLED_TURN[min(n, 4) - 1], n=n))
    tools = stdio_tools(env={"CANCEL_MARK": str(mark)}, tool_approval={"slow": "never"})
    async with (
        http_upstream("/{path:path}", model.handle) as upstream,
        running_gateway(dialect="anthropic-messages", upstream=upstream, tools=tools) as (
            base,
            app,
        ),
    ):
        sources = app.state.gateway.tools
        catalogs = Catalogs(sources)
        offered = len(sources.catalog)
        with capture_logs() as logs:
            first = asyncio.create_task(post(base, "s1", user_body("wait", id="c-1")))
            assert await wait_for(mark.with_name("cancelled.started"), 10), "slow never started"
            pid = int(mark.with_name("cancelled.started").read_text())
            await asyncio.sleep(rng.uniform(0.0, 0.5))
            os.kill(pid, signal.SIGKILL)
            killed = time.monotonic()
            response = await asyncio.wait_for(first, 10)
            assert await catalogs.next() == 0  # its tools left
            assert app.state.gateway.agent is None  # the next turn is offered none
            assert await catalogs.next() == offered  # and came back
            back = time.monotonic() - killed
            second = await post(base, "s2", user_body("add", id="c-2"))
            async with httpx.AsyncClient(trust_env=False) as client:
                metrics = (await client.get(f"{base}/metrics")).text
    assert back < 5, f"the server took {back:.1f} s to come back"
    for verdict in real_clients.check(response.content, (5, 6, 7)).values():
        assert verdict.ok and verdict.finish_reason == "stop", verdict.fatal
        (slow,) = [p for p in verdict.message["parts"] if p.get("toolName") == "slow"]
        assert slow["state"] == "output-error"
        assert "'math' went down during the call" in slow["errorText"], slow
        assert "process exited" in slow["errorText"]
    verdict = real_clients.check(second.content, (7,))[7]
    assert verdict.ok, verdict.fatal
    assert ("dynamic-tool", ("add", "output-available", {"result": 3})) in parts_of(verdict.message)
    (down,) = events(logs, "tools.server_down")
    assert down["server"] == "math" and "process exited" in down["reason"]
    (up,) = events(logs, "tools.server_up")
    assert up["server"] == "math" and up["tools"] == offered and up["down_seconds"] >= 1.0
    assert 'chunkbridge_tool_servers_up{server="math"} 1.0' in metrics
    assert 'chunkbridge_tool_server_downs_total{server="math"} 1.0' in metrics


async def test_the_third_party_everything_server_over_stdio_is_started_again() -> None:
    rng = seeded()
    sources = ToolSources({"everything": ToolServerSettings(**everything_stdio())})
    await sources.start()
    try:
        catalogs = Catalogs(sources)
        assert "get-sum" in sources.catalog
        (pid,) = pids_of(EVERYTHING, os.getpid())
        reports: list[dict[str, Any]] = []
        running = asyncio.create_task(
            sources.call(
                "trigger-long-running-operation", {"duration": 30, "steps": 30}, reports.append
            )
        )
        if rng.random() < 0.5:  # at a progress report, or as the call was sent
            for _ in range(100):
                if reports:
                    break
                await asyncio.sleep(0.05)
            assert reports, "no progress from the long-running operation"
        await asyncio.sleep(rng.uniform(0.0, 0.3))
        os.kill(pid, signal.SIGKILL)
        outcome = await asyncio.wait_for(running, 3)
        assert outcome.error is not None and "'everything' went down" in outcome.error
        assert await catalogs.next() == 0
        down = await sources.call("get-sum", {"a": 1, "b": 2})
        assert down.error is not None and "'everything' is down" in down.error, down
        assert await catalogs.next() > 0
        summed = await sources.call("get-sum", {"a": 1, "b": 2})
        assert summed.error is None and "The sum of 1 and 2 is 3." in str(summed.output)
        (restarted,) = pids_of(EVERYTHING, os.getpid())
        assert restarted != pid
    finally:
        await sources.aclose()
    assert pids_of(EVERYTHING, os.getpid()) == []


def stop(server: subprocess.Popen[str]) -> None:
    server.kill()
    server.wait(10)
    if server.stdout is not None:
        server.stdout.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("failure", ["killed", "killed-then-called", "frozen"])
async def test_an_http_server_that_stops_answering_is_connected_again(failure: str) -> None:
    """Killed: the next request fails to connect (the liveness probe's, or a call's); frozen
    (SIGSTOP: connections are taken, nothing answers): the probe times out."""
    rng = seeded()
    port = free_port()
    server, url = start_http(port=port)
    settings = ToolServerSettings(
        url=url,
        probe_interval=60.0 if failure == "killed-then-called" else 0.2,
        connect_timeout=1.0,
    )
    sources = ToolSources({"web": settings})
    try:
        await sources.start()
        catalogs = Catalogs(sources)
        offered = len(sources.catalog)
        await asyncio.sleep(rng.uniform(0.0, 0.3))
        with capture_logs() as logs:
            if failure == "frozen":
                server.send_signal(signal.SIGSTOP)
            else:
                stop(server)
            if failure == "killed-then-called":
                failed = await sources.call("add", {"a": 1, "b": 2})
                assert failed.error is not None and "'web' went down" in failed.error, failed
            assert await catalogs.next() == 0
            down = await sources.call("add", {"a": 1, "b": 2})
            assert down.error is not None and "'web' is down" in down.error, down
            if failure == "frozen":
                server.send_signal(signal.SIGCONT)
            else:
                server, _ = start_http(port=port)
            assert await catalogs.next(10) == offered
        added = await sources.call("add", {"a": 1, "b": 2})
        assert result_of(added.output) == {"result": 3}, added
    finally:
        await sources.aclose()
        stop(server)
    (went,) = events(logs, "tools.server_down")
    expected = "no answer to a probe: TimeoutError" if failure == "frozen" else "ConnectError"
    assert expected in went["reason"], went
    assert len(events(logs, "tools.server_up")) == 1


async def test_a_server_that_cannot_start_still_fails_the_start_up() -> None:
    sources = ToolSources({"gone": ToolServerSettings(command=sys.executable, args=["-c", "0"])})
    with pytest.raises(Exception, match="tool server 'gone'"):
        await sources.start()
    assert sources.catalog == {}


async def test_a_failure_of_the_supervision_itself_leaves_the_server_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug in closing a lost connection is logged and the server left down — not up with no
    connection, its tools offered and every call failing."""
    mark = tmp_path / "cancelled"
    settings = ToolServerSettings(**stdio_tools(env={"CANCEL_MARK": str(mark)})["math"])
    sources = ToolSources({"math": settings})
    await sources.start()
    try:
        catalogs = Catalogs(sources)
        source = sources.sources["math"]

        close = source.close

        async def broken(failed: bool = False) -> str | None:
            monkeypatch.setattr(source, "close", close)  # once: the connection still closes
            raise RuntimeError("a bug")

        with capture_logs() as logs:
            running = asyncio.create_task(sources.call("slow", {"seconds": 30}))
            assert await wait_for(mark.with_name("cancelled.started"), 10), "slow never started"
            monkeypatch.setattr(source, "close", broken)
            os.kill(int(mark.with_name("cancelled.started").read_text()), signal.SIGKILL)
            assert await catalogs.next() == 0
            outcome = await asyncio.wait_for(running, 5)
            assert await catalogs.next() == 0  # said down again, for the failure
    finally:
        await sources.aclose()
    (failed,) = events(logs, "tools.supervisor_failed")
    assert failed["server"] == "math"
    assert [e["reason"] for e in events(logs, "tools.server_down")][-1].endswith("a bug")
    assert not source.up
    assert outcome.error is not None and "'math' went down during the call" in outcome.error
