"""The agent-loop benchmark: chunkbridge's loop beside the AI SDK's own (``node_loop.mjs``) on
the same scripted model (``provider.py``) and the same MCP server (``tools_server.py``), in one
run. A turn is 3 model steps with 2 tool calls in each of the first two (4 MCP calls).

For each gateway, after a warm-up: ``TURNS`` turns with ``CONCURRENCY`` at once; turns/s over
the wall time, CPU per turn of the gateway's process tree (``/proc``), and the dispatch latency
the MCP server measured (from the model's completed tool call to the MCP request), p50/p90/p99.
Every turn's body must hold the 4 tool results, ``finishReason: "stop"`` and ``[DONE]``.
Everything listens on 127.0.0.1; every process is stopped at the end (and each wait is bounded).

    .venv/bin/python bench/agent_loop/run.py            # TURNS=400 CONCURRENCY=16

With ``DURABLE`` (the default), two more rows: chunkbridge with ``resume = redis`` and ``store =
sqlite`` (a redis-server of the run's own), without and with ``durable = true`` — what durable
turns cost (their checkpoints; calls sent at their step's end), as a ratio to them switched off.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
TURNS = int(os.environ.get("TURNS", 400))
CONCURRENCY = int(os.environ.get("CONCURRENCY", 16))
WARMUP = int(os.environ.get("WARMUP", 40))
LATENCY_TURNS = int(os.environ.get("LATENCY_TURNS", 100))
TICKS = os.sysconf("SC_CLK_TCK")
#: Also measure ``durable = true`` against the same stores without it (DURABLE=0: not).
DURABLE = os.environ.get("DURABLE", "1") != "0"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_port(port: int, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listens on {port} after {seconds} s")


@contextmanager
def started(args: list[str], port: int, log: Path, **env: str) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        proc = subprocess.Popen(
            args,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, **env},
            start_new_session=True,
        )
        try:
            wait_port(port)
            time.sleep(0.5)  # a listening socket is not a finished start-up (tools listed)
            yield proc
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)


def cpu_seconds(pid: int) -> float:
    """User + system CPU of ``pid`` and its descendants."""
    parents: dict[int, int] = {}
    times: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry.name)] = int(fields[1])
        times[int(entry.name)] = int(fields[11]) + int(fields[12])
    tree, total = {pid}, 0
    changed = True
    while changed:
        changed = False
        for child, parent in parents.items():
            if parent in tree and child not in tree:
                tree.add(child)
                changed = True
    for member in tree:
        total += times.get(member, 0)
    return total / TICKS


def body(n: int) -> dict[str, Any]:
    text = {"type": "text", "text": "What are (2+3)×(4×5) and (2+3)+(4×5)?"}
    return {
        "id": f"c{n}",
        "messages": [{"id": f"u{n}", "role": "user", "parts": [text]}],
        "trigger": "submit-message",
    }


def complete(data: bytes) -> bool:
    return (
        data.count(b'"type":"tool-output-available"') == 4
        and b'"finishReason":"stop"' in data
        and data.rstrip().endswith(b"data: [DONE]")
    )


async def load(base: str, turns: int, concurrency: int) -> tuple[float, int, list[float]]:
    """(wall seconds, complete turns, per-turn seconds)."""
    queue = iter(range(turns))
    durations: list[float] = []
    ok = 0
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(timeout=60, limits=limits, trust_env=False) as client:

        async def worker() -> None:
            nonlocal ok
            for n in queue:
                started_at = time.perf_counter()
                response = await client.post(f"{base}/api/sessions/s{n}/chat", json=body(n))
                durations.append(time.perf_counter() - started_at)
                ok += response.status_code == 200 and complete(response.content)

        began = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return time.perf_counter() - began, ok, durations


def quantile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def dispatch_ms(mcp: str) -> list[float]:
    return [ns / 1e6 for ns in httpx.get(f"{mcp}/stats", trust_env=False).json()["dispatch_ns"]]


def measure(name: str, proc: subprocess.Popen[bytes], base: str, mcp: str) -> dict[str, Any]:
    """Throughput and CPU with ``CONCURRENCY`` turns at once, then dispatch latency one turn at
    a time (under load it is the shared MCP server's queue, the same for every gateway)."""
    asyncio.run(load(base, WARMUP, min(CONCURRENCY, 8)))
    httpx.post(f"{mcp}/reset", trust_env=False)
    cpu_before = cpu_seconds(proc.pid)
    wall, ok, durations = asyncio.run(load(base, TURNS, CONCURRENCY))
    cpu = cpu_seconds(proc.pid) - cpu_before
    loaded = dispatch_ms(mcp)
    httpx.post(f"{mcp}/reset", trust_env=False)
    _, ok_alone, alone = asyncio.run(load(base, LATENCY_TURNS, 1))
    idle = dispatch_ms(mcp)
    return {
        "gateway": name,
        "turns": TURNS + LATENCY_TURNS,
        "ok": ok + ok_alone,
        "turns_per_s": TURNS / wall,
        "cpu_ms_per_turn": 1000 * cpu / TURNS,
        "cpu_pct": 100 * cpu / wall,
        "turn_ms_p50_loaded": 1000 * statistics.median(durations),
        "turn_ms_p50_alone": 1000 * statistics.median(alone),
        "dispatch_ms_p50": quantile(idle, 0.5),
        "dispatch_ms_p90": quantile(idle, 0.9),
        "dispatch_ms_p99": quantile(idle, 0.99),
        "dispatch_ms_p50_loaded": quantile(loaded, 0.5),
        "dispatch_samples": len(idle),
    }


async def sdk_floor(mcp: str, calls: int = 200, ours: bool = False) -> float:
    """p50 ms from the ``mcp`` SDK's ``call_tool`` to the server's receipt, nothing else
    running: the part of the dispatch latency the official client itself takes (``ours``: over
    the gateway's HTTP transport, as the gateway calls it; else over the SDK's default)."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from chunkbridge.gateway.tools.http_transport import mcp_http_client

    url = f"{mcp}/mcp"
    http = mcp_http_client() if ours else None
    async with Client(streamable_http_client(url, http_client=http) if ours else url) as client:
        await client.list_tools()
        for _ in range(20):
            await client.call_tool("add", {"a": 1, "b": 2, "ts": time.time_ns()})
        async with httpx.AsyncClient(trust_env=False) as http:
            await http.post(f"{mcp}/reset")
        for _ in range(calls):
            await client.call_tool("add", {"a": 1, "b": 2, "ts": time.time_ns()})
    if http is not None:
        await http.aclose()
    return quantile(dispatch_ms(mcp), 0.5)


def main() -> int:
    python = sys.executable
    link = HERE / "node_modules"
    if not link.exists():
        link.symlink_to(ROOT / "tests" / "conformance" / "node_modules")
    logs = Path(tempfile.mkdtemp(prefix="agent-loop-bench-"))
    model_port, mcp_port = free_port(), free_port()
    upstream, mcp = f"http://127.0.0.1:{model_port}", f"http://127.0.0.1:{mcp_port}"
    config = logs / "agent.toml"
    config.write_text(
        'dialect = "anthropic-messages"\nlog_level = "warning"\nstore = "off"\n\n'
        f'[tools.math]\nurl = "{mcp}/mcp"\n'
    )
    rows = []
    with (
        started(
            [python, str(HERE / "provider.py"), str(model_port)], model_port, logs / "model.log"
        ),
        started([python, str(HERE / "tools_server.py"), str(mcp_port)], mcp_port, logs / "mcp.log"),
    ):
        port = free_port()
        chunkbridge = [
            str(ROOT / ".venv" / "bin" / "chunkbridge"),
            "serve",
            "--config",
            str(config),
            "--upstream",
            upstream,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ]
        with started(chunkbridge, port, logs / "chunkbridge.log") as proc:
            rows.append(measure("chunkbridge", proc, f"http://127.0.0.1:{port}", mcp))
        durable_rows = durable(chunkbridge, logs, mcp) if DURABLE else []
        port = free_port()
        node = ["node", str(HERE / "node_loop.mjs")]
        env = {"PORT": str(port), "UPSTREAM_HTTP": upstream, "MCP_URL": f"{mcp}/mcp"}
        with started(node, port, logs / "node.log", **env) as proc:
            rows.append(measure("node (AI SDK loop)", proc, f"http://127.0.0.1:{port}", mcp))
        floor = asyncio.run(sdk_floor(mcp))
        floor_ours = asyncio.run(sdk_floor(mcp, ours=True))
    ours, theirs = rows
    keys = ("turns_per_s", "cpu_ms_per_turn", "dispatch_ms_p50", "turn_ms_p50_alone")
    ratios = {key: ours[key] / theirs[key] for key in keys}
    durable_ratios = {}
    if durable_rows:  # durable = true beside the same stores without it: its own cost
        off, on = durable_rows
        durable_ratios = {key: on[key] / off[key] for key in keys}
        rows += durable_rows
    report = {
        "turns": TURNS,
        "concurrency": CONCURRENCY,
        "latency_turns": LATENCY_TURNS,
        "rows": rows,
        "ratios": ratios,
        "durable_ratios": durable_ratios,
        "sdk_floor_ms_p50": floor,
        "sdk_floor_ms_p50_our_transport": floor_ours,
        "logs": str(logs),
    }
    out = ROOT / "bench" / "results" / f"agent-loop-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))
    print(
        f"| gateway | ok | turns/s (x{CONCURRENCY}) | CPU ms/turn | CPU % | turn p50 ms "
        "alone | dispatch p50 / p90 / p99 ms alone | dispatch p50 ms loaded |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        dispatch = " / ".join(f"{r[f'dispatch_ms_{q}']:.2f}" for q in ("p50", "p90", "p99"))
        print(
            f"| {r['gateway']} | {r['ok']}/{r['turns']} | {r['turns_per_s']:.1f} | "
            f"{r['cpu_ms_per_turn']:.2f} | {r['cpu_pct']:.0f} | {r['turn_ms_p50_alone']:.1f} | "
            f"{dispatch} | {r['dispatch_ms_p50_loaded']:.1f} |"
        )
    print(
        f"\nchunkbridge / node: turns/s x{ratios['turns_per_s']:.2f}, CPU per turn "
        f"x{ratios['cpu_ms_per_turn']:.2f}, dispatch p50 x{ratios['dispatch_ms_p50']:.2f}; "
        f"the mcp SDK's own call_tool -> server p50: {floor:.2f} ms ({floor_ours:.2f} over "
        f"the gateway's HTTP transport)\nreport: {out}"
    )
    if durable_ratios:
        said = ", ".join(f"{key} x{value:.2f}" for key, value in durable_ratios.items())
        print(f"durable on / off (resume = redis, store = sqlite both): {said}")
    return 0 if all(r["ok"] == r["turns"] for r in rows) else 1


def durable(chunkbridge: list[str], logs: Path, mcp: str) -> list[dict[str, Any]]:
    """chunkbridge with ``resume = redis`` and ``store = sqlite``, without and with ``durable``
    (a redis-server of its own, Debian's, in the run's folder)."""
    redis_port = free_port()
    redis = ["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1"]
    redis += ["--dir", str(logs), "--save", "", "--appendonly", "no"]
    rows = []
    with started(redis, redis_port, logs / "redis.log"):
        for name, flags in (("chunkbridge +redis +sqlite", []), ("... +durable", ["--durable"])):
            port = free_port()
            store = ["--store", "sqlite", "--store-path", str(logs / f"{port}.db")]
            args = [*chunkbridge[:-1], str(port), "--resume", "redis", "--redis-url"]
            args += [f"redis://127.0.0.1:{redis_port}/0", *store, *flags]
            with started(args, port, logs / f"chunkbridge-{port}.log") as proc:
                rows.append(measure(name, proc, f"http://127.0.0.1:{port}", mcp))
    return rows


if __name__ == "__main__":
    sys.exit(main())
