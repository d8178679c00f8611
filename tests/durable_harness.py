"""The durable-turn tests' world: real gateway processes (``--durable``) on one real
redis-server and a real store, in front of a scripted Anthropic model served from a thread of
the test (every instance calls it; it outlives their deaths) and a real MCP server over stdio per
instance (``tests/mcp/durable_server.py``: a read-only ``lookup``, a ``charge`` that must never
run twice, both noting each execution with its idempotency key and the time).

The model's answer is a three-step loop turn — look up, charge, then a long answer streamed a
word at a time — decided by the request itself (how many tool results it carries), so a step
asked again is answered the same. A turn's session is in its user message and its calls'
arguments, so the model's requests and the servers' executions tell turns apart."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.agent_responses import answer
from tests.conftest import ROOT
from tests.gateway_harness import app_thread, free_port, sse_response
from tests.helpers import decode_sse
from tests.test_gateway_process import START_WAIT

SERVER = ROOT / "tests" / "mcp" / "durable_server.py"
#: The final step's answer, streamed a word at a time.
FINAL = " ".join(f"word{i}" for i in range(40)) + "."


#: Steps of a long turn (a session named ``long…``): a lookup in each but the last.
LONG = 10


def steps(session: str) -> list[tuple[str, list[Any]]]:
    """The steps of ``session``'s turn: (text, calls) — three (look up, charge, answer), or
    :data:`LONG` for a ``long…`` session (a lookup in each but the last)."""
    if session.startswith("long"):
        looks = [
            (f"Step {n}.", [(f"call_{n}", "lookup", {"query": session})]) for n in range(1, LONG)
        ]
        return [*looks, (FINAL, [])]
    return [
        ("Let me look that up.", [("call_look", "lookup", {"query": session})]),
        ("Now the charge.", [("call_charge", "charge", {"session": session})]),
        (FINAL, []),
    ]


def frames(session: str, n: int) -> list[bytes]:
    """Step ``n`` (1-based) as Anthropic frames, its text a delta per word."""
    text, calls = steps(session)[n - 1]
    out: list[bytes] = []
    worded = False
    for frame in answer("anthropic-messages", text, calls, n=n):
        event = orjson.loads(frame)
        delta = event.get("delta", {})
        if event.get("type") != "content_block_delta" or delta.get("type") != "text_delta":
            out.append(frame.encode())
        elif not worded:  # the text's deltas (two halves) become one per word
            worded = True
            for i, word in enumerate(text.split(" ")):
                piece = {"type": "text_delta", "text": word if i == 0 else " " + word}
                out.append(orjson.dumps({**event, "delta": piece}))
    return out


def session_of(body: dict[str, Any]) -> str:
    first = body["messages"][0]["content"]
    text = first if isinstance(first, str) else first[0]["text"]
    return str(text.rsplit(" ", 1)[-1])


@dataclass
class Model:
    """The scripted model: each request's step is the number of tool results it carries."""

    pause: float = 0.03
    #: (when, session, step) of every request.
    requests: list[tuple[float, str, int]] = field(default_factory=list)

    async def handle(self, request: Request) -> Response:
        body = orjson.loads(await request.body())
        step = orjson.dumps(body["messages"]).count(b'"tool_result"') + 1
        session = session_of(body)
        self.requests.append((time.time(), session, step))
        return sse_response(frames(session, min(step, len(steps(session)))), self.pause)

    def steps_of(self, session: str) -> list[int]:
        return [step for _, s, step in self.requests if s == session]


@dataclass
class Instance:
    port: int
    proc: subprocess.Popen[str] | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"


class Cluster:
    """Gateway processes that share Redis and a store; each can be killed and started again
    (on its port: a reader's URL stays valid)."""

    def __init__(self, args: list[str], count: int) -> None:
        self.args = args
        self.instances = [Instance(free_port()) for _ in range(count)]
        self.output: list[str] = []

    def start(self, instance: Instance, fault: str = "") -> None:
        self.launch(instance, fault)
        self.ready(instance)

    def start_all(self) -> None:
        """Every instance, started together (each waits for its own start-up only once all
        are under way)."""
        for instance in self.instances:
            self.launch(instance)
        for instance in self.instances:
            self.ready(instance)

    def launch(self, instance: Instance, fault: str = "") -> None:
        env = {**os.environ}
        env.pop("CB_FAULT_KILL_AT", None)
        if fault:
            env["CB_FAULT_KILL_AT"] = fault
        instance.proc = subprocess.Popen(
            [sys.executable, "-m", "chunkbridge", "serve", "--port", str(instance.port)]
            + self.args,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            cwd=ROOT,
        )

    def ready(self, instance: Instance) -> None:
        """Until ``instance`` answers its health check (``RuntimeError`` if it never does)."""
        assert instance.proc is not None
        deadline = time.monotonic() + START_WAIT
        while time.monotonic() < deadline:
            if instance.proc.poll() is not None:
                raise RuntimeError(f"serve exited: {self.collect(instance)}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(instance.base + "/healthz", timeout=0.5).status_code == 200:
                    return
            time.sleep(0.05)
        raise RuntimeError("serve did not become ready")

    def signal(self, instance: Instance, number: int) -> None:
        assert instance.proc is not None
        instance.proc.send_signal(number)

    def kill(self, instance: Instance) -> None:
        self.signal(instance, signal.SIGKILL)
        self.collect(instance)

    def collect(self, instance: Instance) -> str:
        """Wait for the process's end and keep what it printed."""
        proc = instance.proc
        if proc is None:
            return ""
        text = proc.communicate(timeout=30)[0] or ""
        self.output.append(f"--- {instance.base} (pid {proc.pid})\n{text}")
        instance.proc = None
        return text

    def stop_all(self) -> None:
        """SIGTERM to every instance at once, then each one's end (SIGKILL after 30 s)."""
        running = [i for i in self.instances if i.proc is not None]
        for instance in running:
            assert instance.proc is not None
            instance.proc.terminate()
        for instance in running:
            try:
                self.collect(instance)
            except subprocess.TimeoutExpired:
                assert instance.proc is not None
                instance.proc.kill()
                self.collect(instance)


@contextlib.contextmanager
def durable_world(
    tmp: Path,
    store: list[str],
    redis_url: str,
    *,
    count: int = 2,
    lease: float = 1.5,
    slow: float = 0.6,
    extra: tuple[str, ...] = (),
    tools: str = "",
) -> Iterator[tuple[Model, Cluster, Path]]:
    """The model, ``count`` started instances (``store``: the store's flags; ``extra``: more
    flags; ``tools``: more lines of the tool server's table), and the MCP servers' execution
    log."""
    model = Model()
    executions = tmp / "executions"
    executions.touch()
    config = tmp / "gateway.toml"
    config.write_text(
        "[tools.shop]\n"
        f"command = {orjson.dumps(sys.executable).decode()}\n"
        f"args = [{orjson.dumps(str(SERVER)).decode()}]\n"
        f"env = {{ DURABLE_LOG = {orjson.dumps(str(executions)).decode()}, "
        f'DURABLE_SLOW = "{slow}" }}\n'
        'approval = "never"\n' + tools
    )
    app = Starlette(routes=[Route("/{path:path}", model.handle, methods=["POST"])])
    with app_thread(app) as upstream:
        args = [
            *("--config", str(config), "--dialect", "anthropic-messages"),
            *("--upstream", upstream, "--durable", "--owner-lease", str(lease)),
            *("--resume", "redis", "--redis-url", redis_url, *store),
            *("--approval-secret", "s" * 32, "--log-level", "info", "--drain-timeout", "5"),
            *extra,
        ]
        cluster = Cluster(args, count)
        try:
            cluster.start_all()
            yield model, cluster, executions
        finally:
            cluster.stop_all()


class Post(threading.Thread):
    """``session``'s user message POSTed (chat id: the session) on a thread of its own (its
    instance may die under it); ``status``: the response's, 0 when none came."""

    def __init__(self, base: str, session: str) -> None:
        super().__init__(daemon=True)
        self.url = f"{base}/api/sessions/{session}/chat"
        parts = [{"type": "text", "text": f"order {session}"}]
        self.body = {
            "id": session,
            "messages": [{"id": "u1", "role": "user", "parts": parts}],
            "trigger": "submit-message",
        }
        self.status = 0

    def run(self) -> None:
        with contextlib.suppress(httpx.HTTPError):
            with httpx.stream(
                "POST", self.url, json=self.body, timeout=60, trust_env=False
            ) as response:
                self.status = response.status_code
                for _ in response.iter_bytes():
                    pass


class Follower(threading.Thread):
    """A resume read of a chat's stream on a thread of its own, to its end (it waits for the
    turn's log to exist)."""

    def __init__(self, base: str, session: str, post: Post | None = None) -> None:
        super().__init__(daemon=True)
        self.url = f"{base}/api/sessions/{session}/chat/{session}/stream"
        #: The turn's POST: once it failed, a turn not begun never will.
        self.post = post
        self.body = b""
        self.status = 0
        self.attached = threading.Event()

    def run(self) -> None:
        deadline = time.monotonic() + 10
        while True:
            try:
                with httpx.stream("GET", self.url, timeout=60, trust_env=False) as response:
                    self.status = response.status_code
                    for piece in response.iter_bytes():
                        self.body += piece
                        self.attached.set()
            except httpx.HTTPError as exc:
                self.status, self.body = -1, repr(exc).encode()
                break
            failed = self.post is not None and not self.post.is_alive() and self.post.status != 200
            if self.status != 204 or time.monotonic() > deadline or failed:
                break
            time.sleep(0.05)  # the turn has not begun (or never will: its POST failed)
        self.attached.set()

    @property
    def chunks(self) -> list[dict[str, Any]]:
        return decode_sse(self.body)


def start_turn(base: str, session: str) -> Post:
    post = Post(base, session)
    post.start()
    return post


def wait_for(predicate: Any, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


@dataclass(frozen=True)
class Execution:
    event: str
    tool: str
    session: str
    key: str
    at: float


def executions_of(log: Path) -> list[Execution]:
    """Every line of the servers' execution log."""
    out = []
    for line in log.read_text().splitlines():
        event, tool, session, key, at = line.split()
        out.append(Execution(event, tool, session, key, float(at)))
    return out


def postgres(url: str) -> list[str]:
    return ["--store", "postgres", "--store-url", url]


def check_turn(
    session: str,
    follower: Follower,
    verdicts: dict[int, Any],
    model: Model,
    executions: list[Execution],
) -> int:
    """Every check of one turn's followed stream; its recoveries."""
    assert follower.status == 200, (session, follower.status, follower.body[-300:])
    assert follower.body.endswith(b"data: [DONE]\n\n"), (session, follower.body[-300:])
    chunks = follower.chunks
    assert not [c for c in chunks if c["type"] == "error"], (session, chunks[-5:])
    for major, verdict in verdicts.items():
        assert verdict.ok, (session, major, verdict.fatal)
    message = verdicts[7].message
    text = "".join(p["text"] for p in message["parts"] if p["type"] == "text")
    for said in ("Let me look that up.", "Now the charge.", FINAL):
        assert text.count(said) == 1, (session, text)
    parts = {p["toolCallId"]: p for p in message["parts"] if "toolCallId" in p}
    assert parts["call_look"]["state"] == "output-available", (session, parts["call_look"])
    charge = parts["call_charge"]
    if charge["state"] == "output-error":
        assert "interrupted" in charge["errorText"], (session, charge)
    else:
        assert charge["state"] == "output-available", (session, charge)
    ran = [e for e in executions if e.session == session and e.event == "start"]
    charges = [e for e in ran if e.tool == "charge"]
    assert len(charges) <= 1, (session, charges)  # never twice
    looks = [e for e in ran if e.tool == "lookup"]
    assert looks and len({e.key for e in looks}) == 1, (session, looks)  # again: the same key
    assert all(e.key.count(":") == 2 for e in ran), ran  # <run>:<step>:<call id>, always
    assert model.steps_of(session)[-1] == 3, (session, model.steps_of(session))
    finish = [c for c in chunks if c["type"] == "finish"][-1]
    recoveries: int = finish["messageMetadata"]["agentLoop"].get("recoveries", 0)
    return recoveries


def shown(message: dict[str, Any]) -> list[tuple[str, Any]]:
    """What a message shows: its texts, its calls' states and outputs."""
    return [
        (p["type"], p.get("text") or (p.get("state"), p.get("output"), p.get("errorText")))
        for p in message["parts"]
        if p["type"] == "text" or "toolCallId" in p
    ]


def resumed_within(
    session: str, model: Model, executions: list[Execution], killed: float, limit: float
) -> None:
    """The turn's next model request or tool call after ``killed`` came within ``limit``."""
    after = [at for at, s, _ in model.requests if s == session and at > killed]
    after += [e.at for e in executions if e.session == session and e.event == "start"]
    after = [at for at in after if at > killed]
    if after:
        assert min(after) - killed <= limit, (session, min(after) - killed)
