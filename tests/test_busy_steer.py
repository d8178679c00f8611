"""``busy = steer``: a message sent while the gateway's agent loop runs joins the turn at its
next step boundary — after the step's tool results, before the next model call — on two real
gateway processes sharing a real redis-server, in front of a scripted Anthropic model (a
three-step loop turn: look up, charge, answer; the step decided by the tool results the request
carries) and a real MCP server per instance whose slow tools note when they run.

The model's record proves where the message went (its second request carries it after the
first step's tool results); the first stream ends at the boundary (``steeredBy``), the second
carries steps 2–3; every stream is judged by the real ai 5, 6 and 7 clients, and the real ai 7
chat steers through both instances."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests import components
from tests.durable_harness import FINAL, SERVER, Cluster, Model, executions_of, wait_for
from tests.gateway_harness import app_thread
from tests.helpers import decode_sse

pytestmark = [pytest.mark.slow, pytest.mark.conformance]

LOOKUP = "Let me look that up."
CHARGE = "Now the charge."


class RecordingModel(Model):
    """The durable tests' scripted model, keeping each request's body too."""

    def __init__(self) -> None:
        super().__init__()
        self.bodies: list[dict[str, Any]] = []
        #: Seconds the model thinks before it answers a step (by step number).
        self.slow: dict[int, float] = {}

    async def handle(self, request: Request) -> Response:
        body = orjson.loads(await request.body())  # (Starlette keeps it for the model's read)
        self.bodies.append(body)
        step = orjson.dumps(body["messages"]).count(b'"tool_result"') + 1
        await asyncio.sleep(self.slow.get(step, 0.0))
        return await super().handle(request)

    def asked(self, step: int) -> bool:
        """The model was asked for ``step`` (it may not have answered yet)."""
        return any(
            orjson.dumps(b["messages"]).count(b'"tool_result"') + 1 == step for b in self.bodies
        )


@contextlib.contextmanager
def steer_world(
    tmp: Path, redis_url: str, *extra: str
) -> Iterator[tuple[RecordingModel, Cluster, Path]]:
    components.used("mcp")
    model = RecordingModel()
    executions = tmp / "executions"
    executions.touch()
    config = tmp / "gateway.toml"
    config.write_text(
        "[tools.shop]\n"
        f"command = {orjson.dumps(sys.executable).decode()}\n"
        f"args = [{orjson.dumps(str(SERVER)).decode()}]\n"
        f"env = {{ DURABLE_LOG = {orjson.dumps(str(executions)).decode()}, "
        'DURABLE_SLOW = "1.0" }\n'
        'approval = "never"\n'
    )
    app = Starlette(routes=[Route("/{path:path}", model.handle, methods=["POST"])])
    with app_thread(app) as upstream:
        args = [
            *("--config", str(config), "--dialect", "anthropic-messages"),
            *("--upstream", upstream, "--resume", "redis", "--redis-url", redis_url),
            *("--owner-lease", "2", "--busy", "steer", "--log-level", "info"),
            *extra,
        ]
        cluster = Cluster(args, 2)
        try:
            cluster.start_all()
            yield model, cluster, executions
        finally:
            cluster.stop_all()


def user(message_id: str, text: str) -> dict[str, Any]:
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}


class Stream(threading.Thread):
    """A POST read to its end on a thread of its own."""

    def __init__(self, base: str, session: str, messages: list[dict[str, Any]]) -> None:
        super().__init__(daemon=True)
        self.url = f"{base}/api/sessions/{session}/chat"
        self.body = {"id": session, "messages": messages, "trigger": "submit-message"}
        self.status = 0
        self.content = b""
        self.sent_at = 0.0

    def run(self) -> None:
        self.sent_at = time.monotonic()
        with httpx.stream("POST", self.url, json=self.body, timeout=60, trust_env=False) as r:
            self.status = r.status_code
            for piece in r.iter_bytes():
                self.content += piece

    @property
    def chunks(self) -> list[dict[str, Any]]:
        return decode_sse(self.content)

    def text(self) -> str:
        return "".join(c["delta"] for c in self.chunks if c["type"] == "text-delta")


def _texts(chunks: list[dict[str, Any]]) -> str:
    return "".join(c["delta"] for c in chunks if c["type"] == "text-delta")


def test_a_message_sent_during_a_tool_call_steers_the_loop_at_the_step_boundary(
    tmp_path: Path, redis_url: str, real_clients
) -> None:
    """The acceptance: in a 3-step loop turn, a message sent during step 1's tool call reaches
    the model in step 2's request after step 1's tool results; the first stream ends at the
    boundary, the second carries steps 2–3."""
    with steer_world(tmp_path, redis_url) as (model, cluster, executions):
        a, b = (instance.base for instance in cluster.instances)
        first = Stream(a, "s1", [user("u1", "order s1")])
        first.start()
        wait_for(lambda: any(e.tool == "lookup" for e in executions_of(executions)), 20, "lookup")
        second = Stream(b, "s1", [user("u1", "order s1"), user("u2", "make it two")])
        second.start()
        first.join(30)
        second.join(30)
        counted = [httpx.get(base + "/metrics", trust_env=False).text for base in (a, b)]
    assert (first.status, second.status) == (200, 200)
    assert 'chunkbridge_busy_total{event="steered"} 1.0' in counted[0]
    assert 'chunkbridge_busy_total{event="ran"} 1.0' in counted[1]
    # the first stream: step 1 and its tool result, then the boundary
    finish = first.chunks[-1]
    assert finish["type"] == "finish" and finish["messageMetadata"]["steeredBy"] == "u2"
    assert finish["messageMetadata"]["agentLoop"]["ending"] == "steered"
    assert _texts(first.chunks) == LOOKUP
    outputs = [c for c in first.chunks if c["type"] == "tool-output-available"]
    assert [c["toolCallId"] for c in outputs] == ["call_look"]
    # the second: position 1 until the boundary, then steps 2 and 3
    positions = [c["data"]["position"] for c in second.chunks if c["type"] == "data-queue"]
    assert positions == [1, 0]
    assert _texts(second.chunks) == CHARGE + FINAL
    assert [c["toolCallId"] for c in second.chunks if c["type"] == "tool-input-available"] == [
        "call_charge"
    ]
    assert second.chunks[-1]["finishReason"] == "stop"
    # the model: step 2's request carries the message after step 1's tool results
    assert model.steps_of("s1") == [1, 2, 3]
    steered = orjson.dumps(model.bodies[1]["messages"]).decode()
    assert steered.index('"tool_result"') < steered.index("make it two")
    assert orjson.dumps(model.bodies[0]).decode().count("make it two") == 0
    ran = [e.tool for e in executions_of(executions) if e.event == "start"]
    assert ran == ["lookup", "charge"]
    for body in (first.content, second.content):
        for major, verdict in real_clients.check(body).items():
            assert verdict.ok, (major, verdict.fatal)


def test_a_message_sent_while_the_last_step_streams_waits_as_queued(
    tmp_path: Path, redis_url: str, real_clients
) -> None:
    """No step boundary comes after the last step (the model answers without tools): the
    message waits for the turn's end as a queued one, said once in a log line."""
    with steer_world(tmp_path, redis_url) as (model, cluster, executions):
        a, b = (instance.base for instance in cluster.instances)
        first = Stream(a, "s2", [user("u1", "order s2")])
        first.start()
        wait_for(lambda: model.steps_of("s2")[-1:] == [3], 30, "the last step")
        second = Stream(b, "s2", [user("u1", "order s2"), user("u2", "thanks")])
        second.start()
        first.join(30)
        second.join(30)
        cluster.stop_all()
    assert (first.status, second.status) == (200, 200)
    ending = first.chunks[-1]["messageMetadata"]
    assert "steeredBy" not in ending and ending["agentLoop"]["ending"] == "done"
    assert _texts(first.chunks) == LOOKUP + CHARGE + FINAL
    assert model.steps_of("s2")[:3] == [1, 2, 3] and len(model.steps_of("s2")) == 4
    last = orjson.dumps(model.bodies[-1]["messages"]).decode()
    assert last.index(FINAL) < last.index("thanks")  # after the whole answer
    logged = "".join(cluster.output)
    assert logged.count('"busy.steer_as_queue"') == 1, logged[-3000:]
    for body in (first.content, second.content):
        for major, verdict in real_clients.check(body).items():
            assert verdict.ok, (major, verdict.fatal)


async def test_the_ai7_chat_steers_through_both_instances(
    tmp_path: Path, redis_url: str, real_clients
) -> None:
    with steer_world(tmp_path, redis_url) as (model, cluster, executions):
        a, b = (instance.base for instance in cluster.instances)
        result = await real_clients.busy_chat(
            apis=[f"{a}/api/sessions/s3/chat", f"{b}/api/sessions/s3/chat"],
            major=7,
            chatId="s3",
            texts=["order s3", "make it two"],
            gapMs=50,
            afterChars=len(LOOKUP),
        )
    assert result["status"] == "ready" and not result["errors"], result
    assert [r["status"] for r in result["requests"]] == [200, 200]
    shown = [m["role"] for m in result["messages"]]
    assert shown == ["user", "assistant", "user", "assistant"]
    first, second = result["messages"][1], result["messages"][3]
    assert first["metadata"]["steeredBy"] == result["messages"][2]["id"]
    assert [p["text"] for p in first["parts"] if p["type"] == "text"] == [LOOKUP]
    assert [p["text"] for p in second["parts"] if p["type"] == "text"] == [CHARGE, FINAL]
    assert model.steps_of("s3") == [1, 2, 3]
    for verdicts in real_clients.check_many(result["bodies"]):
        for major, verdict in verdicts.items():
            assert verdict.ok, (major, verdict.fatal)


def test_interrupt_during_a_tool_call_cancels_it_and_ends_its_part_as_interrupted(
    tmp_path: Path, redis_url: str, real_clients
) -> None:
    with steer_world(tmp_path, redis_url, "--busy", "interrupt") as (model, cluster, executions):
        a, b = (instance.base for instance in cluster.instances)
        first = Stream(a, "s4", [user("u1", "order s4")])
        first.start()
        wait_for(lambda: any(e.tool == "lookup" for e in executions_of(executions)), 20, "lookup")
        second = Stream(b, "s4", [user("u1", "order s4"), user("u2", "never mind")])
        second.start()
        first.join(30)
        ended = time.monotonic()
        second.join(30)
    assert (first.status, second.status) == (200, 200)
    assert ended - second.sent_at <= 1.0 + 0.5  # (the join's own wake-up on a loaded machine)
    finish = first.chunks[-1]
    assert finish["messageMetadata"] == {"interruptedBy": "u2"}
    (look,) = [c for c in first.chunks if c.get("toolCallId") == "call_look" and "errorText" in c]
    assert look["type"] == "tool-output-error"
    lookups = [e for e in executions_of(executions) if e.tool == "lookup"]
    assert [e.event for e in lookups] == ["start"]  # cancelled: it never ended
    history = orjson.dumps(model.bodies[1]["messages"]).decode()
    assert history.index("call_look") < history.index("never mind")
    for body in (first.content, second.content):
        for major, verdict in real_clients.check(body).items():
            assert verdict.ok, (major, verdict.fatal)


def test_interrupt_while_the_model_is_being_called_ends_the_turn_at_once(
    tmp_path: Path, redis_url: str, real_clients
) -> None:
    """Between steps the turn waits for the model's answer: an interrupt does not wait for it."""
    with steer_world(tmp_path, redis_url, "--busy", "interrupt") as (model, cluster, _):
        model.slow[2] = 8.0  # the model thinks long before step 2
        a, b = (instance.base for instance in cluster.instances)
        first = Stream(a, "s5", [user("u1", "order s5")])
        first.start()
        wait_for(lambda: model.asked(2), 20, "step 2 asked")
        second = Stream(b, "s5", [user("u1", "order s5"), user("u2", "stop thinking")])
        second.start()
        first.join(30)
        ended = time.monotonic()
        second.join(30)
    assert (first.status, second.status) == (200, 200)
    assert ended - second.sent_at <= 1.0 + 0.5  # not the model's 8 s
    assert first.chunks[-1]["messageMetadata"] == {"interruptedBy": "u2"}
    assert _texts(first.chunks) == LOOKUP
    for body in (first.content, second.content):
        for major, verdict in real_clients.check(body).items():
            assert verdict.ok, (major, verdict.fatal)
