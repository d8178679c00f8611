"""The CLI as users run it: serve in front of mock-upstream, demo, record, SIGTERM drain — real
processes. The demos of the other dialects are built from the same flags and served in the
test's own event loop (:func:`tests.gateway_harness.running_demo`): a process of each would
prove only what the agent-ops demo's process already does."""

from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from chunkbridge.gateway.devtools.replay import replay_file
from tests.gateway_harness import agent_ops_turn, free_port, post, running_demo, user_body
from tests.helpers import decode_sse, types

pytestmark = pytest.mark.slow  # long: its file runs first (tests/conftest.py)

ROOT = Path(__file__).resolve().parents[1]
#: Longest wait for a process to be ready: a loaded 2-core machine (other workers starting
#: theirs, Node and Chromium beside them) has taken over 20 s.
START_WAIT = 40
FIXTURES = ROOT / "fixtures"


@contextmanager
def process(
    *args: str,
    ready_url: str | None = None,
    ready_line: str | None = None,
    env: dict[str, str] | None = None,
    module: str = "chunkbridge",
) -> Iterator[subprocess.Popen[str]]:
    """``python -m <module> <args>``, once ready (its ``ready_url`` answers 200, or it printed
    ``ready_line``); stopped (SIGTERM, then SIGKILL after 10 s) on the way out."""
    proc = _spawn(args, env, module)
    try:
        _ready(proc, args[0], ready_url, ready_line)
        yield proc
    finally:
        _stop([proc])


@contextmanager
def processes(
    *commands: tuple[tuple[str, ...], str], env: dict[str, str] | None = None
) -> Iterator[list[subprocess.Popen[str]]]:
    """Several ``chunkbridge`` processes (``(args, ready_url)`` each) started together: each
    is waited for once all are under way; all stopped together on the way out."""
    procs: list[subprocess.Popen[str]] = []
    try:
        for args, _ in commands:
            procs.append(_spawn(args, env, "chunkbridge"))
        for proc, (args, url) in zip(procs, commands, strict=True):
            _ready(proc, args[0], url, None)
        yield procs
    finally:
        _stop(procs)


def _spawn(args: tuple[str, ...], env: dict[str, str] | None, module: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", module, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=ROOT,
    )


def _ready(
    proc: subprocess.Popen[str], name: str, ready_url: str | None, ready_line: str | None
) -> None:
    deadline = time.monotonic() + START_WAIT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited: {proc.stdout.read() if proc.stdout else ''}")
        if ready_line is not None:
            # select first: a process that prints nothing must not block the test forever
            if proc.stdout and select.select([proc.stdout], [], [], 0.5)[0]:
                if ready_line in proc.stdout.readline():
                    return
            continue
        try:
            if httpx.get(ready_url or "", timeout=0.5, trust_env=False).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError(f"{name} did not become ready")


def _stop(procs: list[subprocess.Popen[str]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
    for proc in procs:
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout:
            proc.stdout.close()


def test_with_two_workers_both_serve_turns(tmp_path: Path) -> None:
    quick = tmp_path / "quick.jsonl"
    quick.write_text("\n".join(orjson.dumps(e).decode() for e in agent_ops_turn("hi")) + "\n")
    up_port, gw_port = free_port(), free_port()
    upstream = f"ws://127.0.0.1:{up_port}/sessions/{{session_id}}/ws"
    with (
        process("mock-upstream", "--port", str(up_port), str(quick), ready_line="mock upstream:"),
        process(
            "serve", "--port", str(gw_port), "--workers", "2", "--dialect", "agent-ops-v2",
            "--upstream", upstream, ready_url=f"http://127.0.0.1:{gw_port}/healthz",
        ) as gateway,
    ):  # fmt: skip
        assert gateway.stdout is not None
        pids: set[int] = set()
        deadline = time.monotonic() + 20
        turns = 0
        # Which process accepts a connection is the kernel's choice: turns until both did.
        while len(pids) < 2 and time.monotonic() < deadline and turns < 400:
            turns += 1
            sock = _started_turn(gw_port, f"s{turns}")
            assert _rest_of(sock).endswith(b"data: [DONE]\n\n\r\n0\r\n\r\n")
            while select.select([gateway.stdout], [], [], 0.01)[0]:
                line = gateway.stdout.readline()
                if line.startswith("{") and '"stream.end"' in line:
                    pids.add(orjson.loads(line)["pid"])
    assert len(pids) == 2, (pids, turns)


def _started_turn(port: int, session: str) -> socket.socket:
    """A turn started on a raw connection (its answer is read later by :func:`_rest_of`)."""
    body = orjson.dumps(user_body())
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    head = (
        f"POST /api/sessions/{session}/chat HTTP/1.1\r\nhost: x\r\ncontent-type: "
        f"application/json\r\ncontent-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    sock.sendall(head.encode() + body)
    assert sock.recv(12).startswith(b"HTTP/1.1 200")
    return sock


def _rest_of(sock: socket.socket) -> bytes:
    """What the connection says until the gateway closes it (chunked framing and all)."""
    data = b""
    with sock:
        while chunk := sock.recv(65536):
            data += chunk
    return data


def post_chat(base: str, session: str, body: dict | None = None) -> httpx.Response:
    return httpx.post(
        f"{base}/api/sessions/{session}/chat", json=body or user_body(), timeout=30, trust_env=False
    )


@pytest.mark.parametrize(
    ("dialect", "transport"),
    [
        ("agent-ops-v2", "websocket"),
        ("open-harness", "websocket"),
        ("openai-chat", "websocket"),
        ("anthropic-messages", "http"),
        ("openai-responses", "http"),
        ("gemini", "http"),
    ],
)
def test_serve_in_front_of_mock_upstream_matches_replay(
    dialect: str, transport: str, real_clients
) -> None:
    recordings = sorted((FIXTURES / dialect).glob("*.jsonl"))
    up_port, gw_port = free_port(), free_port()
    upstream = f"ws://127.0.0.1:{up_port}/sessions/{{session_id}}/ws"
    if transport == "http":
        upstream = f"http://127.0.0.1:{up_port}/sessions/{{session_id}}"
    with (
        process(
            "mock-upstream",
            "--transport",
            transport,
            "--port",
            str(up_port),
            *map(str, recordings),
            ready_line="mock upstream:",
        ),
        process(
            "serve",
            "--port",
            str(gw_port),
            "--dialect",
            dialect,
            "--upstream",
            upstream,
            ready_url=f"http://127.0.0.1:{gw_port}/healthz",
        ),
    ):
        bodies = [post_chat(f"http://127.0.0.1:{gw_port}", r.stem).content for r in recordings]
    live = [b.removeprefix(b": stream-open\n\n") for b in bodies]
    results = real_clients.check_many(live + [replay_file(dialect, r) for r in recordings])
    for index, recording in enumerate(recordings):
        over_the_wire, replayed = results[index], results[len(recordings) + index]
        for major in (5, 6, 7):
            assert over_the_wire[major].ok, (recording.stem, major, over_the_wire[major].fatal)
            a, b = over_the_wire[major].message, replayed[major].message
            # same parts as the offline replay (message ids differ: the gateway makes fresh ones)
            assert a["parts"] == b["parts"], recording.stem
            assert over_the_wire[major].finish_reason == replayed[major].finish_reason


@pytest.mark.parametrize("workers", [1, 2])
def test_sigterm_drains_open_streams_with_a_valid_ending(tmp_path: Path, workers: int) -> None:
    slow = tmp_path / "slow.jsonl"
    lines = [{"type": "message.create", "turnId": "t"}] + [
        {"type": "message.part.text-delta", "turnId": "t", "delta": f"w{i} "} for i in range(400)
    ]
    slow.write_text("\n".join(orjson.dumps(x).decode() for x in lines) + "\n")
    (tmp_path / "slow.jsonl.timing").write_text("\n".join(str(i * 50) for i in range(401)))
    up_port, gw_port = free_port(), free_port()
    with (
        process(
            "mock-upstream",
            "--port",
            str(up_port),
            "--timing",
            "recorded",
            str(slow),
            ready_line="mock upstream:",
        ),
        process(
            "serve",
            "--port",
            str(gw_port),
            "--workers",
            str(workers),
            "--drain-timeout",
            "5",
            "--dialect",
            "agent-ops-v2",
            "--upstream",
            f"ws://127.0.0.1:{up_port}/sessions/{{session_id}}/ws",
            ready_url=f"http://127.0.0.1:{gw_port}/healthz",
        ) as gateway,
    ):
        others = []
        if workers > 1:  # every worker serves the port: turns of other sessions meanwhile
            others = [_started_turn(gw_port, f"other{i}") for i in range(12)]
        body = b""
        with httpx.stream(
            "POST",
            f"http://127.0.0.1:{gw_port}/api/sessions/s/chat",
            json=user_body(),
            timeout=30,
            trust_env=False,
        ) as response:
            for part in response.iter_bytes():
                body += part
                if b"w3 " in body and gateway.poll() is None:
                    gateway.send_signal(signal.SIGTERM)
        for other in others:  # every turn of every worker ended validly too
            assert _rest_of(other).endswith(b"data: [DONE]\n\n\r\n0\r\n\r\n")
        # uvicorn re-raises the signal after its graceful shutdown: -SIGTERM is a clean exit
        assert gateway.wait(15) in (0, -signal.SIGTERM)
    chunks = decode_sse(body)
    assert types(chunks)[-4:] == ["text-end", "error", "finish-step", "finish"]
    assert chunks[-2 - 1]["errorText"] == "The server is restarting; please try again."
    assert body.endswith(b"data: [DONE]\n\n")


def test_demo_serves_the_page_and_a_stream_every_client_accepts(
    tmp_path: Path, real_clients
) -> None:
    port = free_port()
    args = ("demo", "--dialect", "agent-ops-v2", "--port", str(port))
    args += ("--store-path", str(tmp_path / "chats.sqlite3"))  # not the demo's file in /tmp
    with process(*args, ready_url=f"http://127.0.0.1:{port}/healthz"):
        base = f"http://127.0.0.1:{port}"
        page = httpx.get(base + "/", trust_env=False)
        response = post_chat(base, "any-session-id", user_body("Tell me"))
        log = httpx.get(f"{base}/demo/upstream-events/any-session-id", trust_env=False).json()
    events = log["sent"]
    assert log["received"][0]["type"] == "prompt" and log["received"][0]["content"] == "Tell me"
    assert page.status_code == 200 and "Upstream events" in page.text
    # every placeholder filled; busy = reject (the default): Send waits for the answer's end
    assert "{{" not in page.text and "const BUSY = 'reject';" in page.text
    assert "busy = " not in page.text.split("</header>")[0]
    assert any(e.get("type") == "message.finalize" for e in events)
    for major, verdict in real_clients.check(response.content).items():
        assert verdict.ok, (major, verdict.fatal)
        assert "Tell me" in verdict.text()
        (tool,) = verdict.parts("tool-search_docs")
        assert tool["state"] == "output-available" and tool["providerExecuted"] is True
        assert verdict.finish_reason == "stop"


async def test_the_demo_asks_on_cue_and_continues_with_the_answer(real_clients) -> None:
    async with running_demo("--dialect", "agent-ops-v2") as base:
        first = await post(base, "ask-1", user_body("ask me"))
        message = real_clients.check(first.content)[7].message
        assert message is not None
        parts = [
            {**p, "state": "output-available", "output": "blue"}
            if p["type"] == "tool-ask_user"
            else p
            for p in message["parts"]
        ]
        body = user_body("ask me")
        body["messages"].append({**message, "parts": parts})
        second = await post(base, "ask-1", body)
        log = await upstream_events(base, "ask-1")
    answers = [f for f in log["received"] if f.get("type") == "answer"]
    assert len(answers) == 1 and answers[0]["answer"] == "blue"
    for major, verdict in real_clients.check(second.content).items():
        assert verdict.ok and "You chose **blue**" in verdict.text(), (major, verdict.fatal)


async def upstream_events(base: str, session: str) -> dict[str, Any]:
    """What the demo backend received and sent for ``session``."""
    async with httpx.AsyncClient(trust_env=False) as client:
        response = await client.get(f"{base}/demo/upstream-events/{session}")
    events: dict[str, Any] = response.json()
    return events


async def test_the_ag_ui_demo_asks_for_an_approval_on_cue(real_clients) -> None:
    """`make demo DIALECT=ag-ui`: "approve" stops the run at an interrupt on its tool call; the
    real ai 7 chat approves it and the next run resumes with the decision."""
    async with running_demo("--dialect", "ag-ui", "--target", "7") as base:
        answer = {"kind": "approval", "approved": True}
        api = f"{base}/api/sessions/agui-a/chat"
        result = await real_clients.chat_loop(api, 7, "approve it", [answer])
        log = await upstream_events(base, "agui-a")
    assert result["error"] is None, result
    (tool,) = [p for p in result["messages"][1]["parts"] if p["type"] == "tool-archive_chat"]
    assert tool["state"] == "output-available" and tool["output"] == {"archived": True}
    resumed = [r["resume"] for r in log["received"] if r.get("resume")]
    assert resumed == [
        [{"interruptId": "int-call-1", "status": "resolved", "payload": {"approved": True}}]
    ]


@pytest.mark.parametrize(
    "dialect", ["anthropic-messages", "openai-responses", "gemini", "ag-ui", "pi-agent"]
)
async def test_demo_of_a_provider_dialect_plays_a_mock_provider(dialect: str, real_clients) -> None:
    async with running_demo("--dialect", dialect) as base:
        response = await post(base, "demo-1", user_body("What is the weather?"))
        log = await upstream_events(base, "demo-1")
    (request,) = log["received"]
    history = request.get("messages") or request.get("input") or request.get("contents")
    assert "What is the weather?" in orjson.dumps(history[-1] if history else request).decode()
    last = log["sent"][-1]
    ends = ("message_stop", "response.completed", "RUN_FINISHED", "agent_end")
    assert last.get("type") in ends or "usageMetadata" in last
    for major, verdict in real_clients.check(response.content).items():
        assert verdict.ok, (major, verdict.fatal)
        assert "What is the weather?" in verdict.text()
        assert verdict.parts("reasoning")[0]["text"]
        agent_tools = {"ag-ui": "tool-search", "pi-agent": "tool-read"}
        if dialect in agent_tools:  # the demo agent runs its own tool
            (tool,) = verdict.parts(agent_tools[dialect])
            assert tool["state"] == "output-available" and verdict.finish_reason == "stop"
            continue
        (tool,) = verdict.parts("tool-get_weather")
        assert tool["state"] == "input-available" and tool["input"] == {"city": "Paris"}
        assert verdict.finish_reason == "tool-calls"


def test_serve_answers_the_websocket_transport() -> None:
    """The WebSocket endpoint under `chunkbridge serve` itself (uvicorn's WebSocket support on)."""
    from websockets.sync.client import connect

    port = free_port()
    args = ("serve", "--port", str(port), "--dialect", "agent-ops-v2", "--resume", "memory")
    args += ("--upstream", "ws://127.0.0.1:9/sessions/{session_id}/ws")
    with process(*args, ready_url=f"http://127.0.0.1:{port}/healthz"):
        with connect(f"ws://127.0.0.1:{port}/api/sessions/s/chat/ws") as ws:
            ws.send('{"type": "resume", "requestId": "r1", "id": "c"}')
            assert orjson.loads(ws.recv(timeout=5)) == {"type": "no-active", "requestId": "r1"}


@pytest.mark.parametrize(
    ("dialect", "recording", "transport"),
    [
        ("agent-ops-v2", "tool-lifecycle", "websocket"),
        ("gemini", "google-search-grounding", "http"),
    ],
)
def test_record_writes_frames_that_replay(
    tmp_path: Path, dialect: str, recording: str, transport: str
) -> None:
    source = FIXTURES / dialect / f"{recording}.jsonl"
    port = free_port()
    out = tmp_path / "rec.jsonl"
    upstream = f"ws://127.0.0.1:{port}/sessions/{{session_id}}/ws"
    if transport == "http":
        upstream = f"http://127.0.0.1:{port}/sessions/{{session_id}}"
    mock = ("mock-upstream", "--transport", transport, "--port", str(port), str(source))
    with process(*mock, ready_line="mock upstream:"):
        proc = subprocess.run(
            [
                *(sys.executable, "-m", "chunkbridge", "record", "--dialect", dialect),
                *("--upstream", upstream, "--prompt", "list files", "-o", str(out)),
            ],
            capture_output=True,
            text=True,
            timeout=30,
            cwd=ROOT,
        )
    assert proc.returncode == 0, proc.stderr
    recorded = [orjson.loads(x) for x in out.read_text().splitlines()]
    original = [orjson.loads(x) for x in source.read_text().splitlines() if x.strip()]
    # the turn may end at its terminal event, before a trailing frame of the recording
    assert recorded == original[: len(recorded)] and len(recorded) >= len(original) - 1
    assert len((tmp_path / "rec.jsonl.timing").read_text().split()) == len(recorded)
    assert replay_file(dialect, out) == replay_file(dialect, source)


def test_serve_reports_configuration_errors(tmp_path: Path) -> None:
    bad = tmp_path / "c.toml"
    bad.write_text('upstream = "ws://x/no-placeholder"\n')
    proc = subprocess.run(
        [sys.executable, "-m", "chunkbridge", "serve", "--config", str(bad)],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=ROOT,
    )
    assert proc.returncode == 2 and "{session_id}" in proc.stderr


def test_serve_refuses_durable_turns_without_redis_before_it_listens(tmp_path: Path) -> None:
    """A store alone is not enough: durable turns need resume = redis as well."""
    serve = (sys.executable, "-m", "chunkbridge", "serve", "--durable", "--port", str(free_port()))
    proc = subprocess.run(
        [
            *serve,
            *("--dialect", "anthropic-messages", "--upstream", "http://127.0.0.1:1"),
            *("--store", "sqlite", "--store-path", str(tmp_path / "chats.sqlite3")),
        ],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=ROOT,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "gateway.start" not in proc.stdout + proc.stderr  # it never got to listen
    assert all(name in proc.stderr for name in ("durable", "resume", "store")), proc.stderr


def test_provider_keys_from_the_environment_are_never_logged() -> None:
    """Debug logging, a served turn and a failed one: the key is in no line of output."""
    secret = "sk-ant-api03-NEVER-LOG-ME-0123456789"
    recording = FIXTURES / "anthropic-messages" / "plain-text.jsonl"
    up_port, gw_port, dead_port, fail_port = free_port(), free_port(), free_port(), free_port()
    env = {"CHUNKBRIDGE_ANTHROPIC_MESSAGES_API_KEY": secret}
    with (
        process(
            "mock-upstream",
            "--transport",
            "http",
            "--port",
            str(up_port),
            str(recording),
            ready_line="mock upstream:",
        ),
        process(
            "serve",
            "--port",
            str(gw_port),
            "--dialect",
            "anthropic-messages",
            "--upstream",
            f"http://127.0.0.1:{up_port}/sessions/{{session_id}}",
            "--log-level",
            "debug",
            "--log-format",
            "json",
            ready_url=f"http://127.0.0.1:{gw_port}/healthz",
            env=env,
        ) as gateway,
        process(
            "serve",
            "--port",
            str(fail_port),
            "--dialect",
            "anthropic-messages",
            "--upstream",
            f"http://127.0.0.1:{dead_port}",
            "--log-level",
            "debug",
            "--connect-timeout",
            "1",
            ready_url=f"http://127.0.0.1:{fail_port}/healthz",
            env=env,
        ) as failing,
    ):
        ok = post_chat(f"http://127.0.0.1:{gw_port}", "s1")
        failed = post_chat(f"http://127.0.0.1:{fail_port}", "s2")
        for proc in (gateway, failing):
            proc.terminate()
            proc.wait(10)
        output = (gateway.stdout.read() if gateway.stdout else "") + (
            failing.stdout.read() if failing.stdout else ""
        )
    assert ok.status_code == 200 and failed.status_code == 502
    assert "stream.end" in output and "request." in output  # the turns were logged
    assert secret not in output and secret[-12:] not in output
