"""A call parked on a question in one instance of the gateway, answered through another
(``resume = redis``): the answer is handed over through Redis to the instance whose MCP server
waits inside the call, and the call's outcome comes back to the turn that took the answer. The
server is server-everything (npm, MCP 2025-11-25, ``trigger-elicitation-request``); the gateways
are real processes behind a round-robin "load balancer" (the real ai 5, 6 and 7 chats send
their first request to one, the continuation to the other)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest
import redis.asyncio as aioredis
from starlette.applications import Starlette
from starlette.routing import Route

from chunkbridge.gateway.logging import get_logger
from chunkbridge.gateway.stores.redis_relay import RedisRelay
from chunkbridge.gateway.tool_settings import ToolServerSettings
from chunkbridge.gateway.tools import ToolAnswer, ToolSources
from tests.agent_responses import answer
from tests.conformance.harness import chat_loop
from tests.gateway_harness import app_thread, free_port
from tests.mcp.everything import everything_stdio
from tests.test_agent_loop import Model
from tests.test_gateway_process import process

TOOL = "trigger-elicitation-request"


@asynccontextmanager
async def instance(redis_url: str, name: str) -> Any:
    """One instance's tools with its own server-everything and its relay on ``redis_url``."""
    sources = ToolSources({"everything": ToolServerSettings(**everything_stdio())})
    relay = RedisRelay(aioredis.Redis.from_url(redis_url), name, get_logger("test"))
    await sources.start()
    await relay.start()
    sources.use_relay(relay)
    try:
        yield sources, relay
    finally:
        await relay.aclose()
        await sources.aclose()
        await relay.redis.aclose()


async def test_the_instance_holding_the_call_gets_the_answer_another_took(redis_url: str) -> None:
    async with instance(redis_url, "a") as (a, relay_a), instance(redis_url, "b") as (b, _):
        asked = await a.call(TOOL, {})
        assert asked.asks is not None
        ada = ToolAnswer(asked.asks.key, "accept", {"name": "Ada"}, None)
        done = await b.call(TOOL, {}, answer=ada)
        again = await b.call(TOOL, {}, answer=ada)  # answered once: nobody holds it now
        late = await a.call(TOOL, {})
        assert late.asks is not None
        await relay_a.aclose()  # instance a stops listening: as if it were gone
        bo = ToolAnswer(late.asks.key, "accept", {"name": "Bo"}, None)
        started = time.monotonic()
        orphan = await b.call(TOOL, {}, answer=bo)
        seconds = time.monotonic() - started
    assert done.error is None, done
    assert "Ada" in orjson.dumps(done.output).decode()
    assert again.error is not None and "no longer waits" in again.error
    assert orphan.error is not None and "no longer waits" in orphan.error
    assert seconds < 1.0  # told at once, not at the limit


def script(n: int, body: dict[str, Any]) -> list[Any]:
    """Ask through the tool, then thank the user once its result is in (per chat, so several
    chats can share the model)."""
    heard = orjson.dumps(body["messages"][-1]).decode()
    if "tool_result" in heard:
        return answer("anthropic-messages", "Thanks, Ada.", [], n=n)
    return answer("anthropic-messages", "I need your details.", [("call_e", TOOL, {})], n=n)


@contextmanager
def two_instances(
    upstream: str, redis_url: str, directory: Path
) -> Iterator[list[tuple[str, subprocess.Popen[str]]]]:
    everything = everything_stdio()
    config = directory / "gateway.toml"
    config.write_text(
        "[tools.everything]\n"
        f"command = {orjson.dumps(everything['command']).decode()}\n"
        f"args = {orjson.dumps(everything['args']).decode()}\n"
        'approval = "never"\n'
    )
    common = (
        *("--config", str(config), "--dialect", "anthropic-messages", "--upstream", upstream),
        *("--resume", "redis", "--redis-url", redis_url, "--approval-secret", "s" * 32),
        *("--log-level", "info"),
    )
    with ExitStack() as stack:
        instances = []
        for _ in range(2):
            port = free_port()
            ready = f"http://127.0.0.1:{port}/healthz"
            proc = stack.enter_context(
                process("serve", "--port", str(port), *common, ready_url=ready)
            )
            instances.append((f"http://127.0.0.1:{port}", proc))
        yield instances


def logs_of(instances: list[tuple[str, subprocess.Popen[str]]]) -> str:
    """What the instances logged (they are stopped for it): for a failure's message."""
    out = []
    for base, proc in instances:
        proc.terminate()
        text = proc.communicate(timeout=10)[0] if proc.stdout else ""
        out.append(f"--- {base}\n{text}")
    return "\n".join(out)


@pytest.mark.usefixtures("real_clients")
def test_a_question_asked_on_one_instance_is_answered_through_the_other(
    redis_url: str, tmp_path: Path
) -> None:
    model = Model(script)
    app = Starlette(routes=[Route("/{path:path}", model.handle, methods=["POST"])])
    with app_thread(app) as upstream, two_instances(upstream, redis_url, tmp_path) as both:
        results = {}
        for major in (5, 6, 7):
            apis = [f"{base}/api/sessions/s-{major}/chat" for base, _ in both]
            answers = [{"kind": "question", "output": {"name": "Ada"}}]
            results[major] = chat_loop(apis[0], major, "sign me up", answers, True, apis=apis)
        if any(result["error"] is not None for result in results.values()):
            pytest.fail(f"{results}\n{logs_of(both)}")
    for major, result in results.items():
        assert result["status"] == "ready", (major, result)
        message = result["messages"][-1]
        (call,) = [p for p in message["parts"] if p.get("toolName") == TOOL]
        assert call["state"] == "output-available", (major, call)
        assert "Name: Ada" in orjson.dumps(call["output"]).decode()
        texts = [p["text"] for p in message["parts"] if p["type"] == "text"]
        assert texts[-1] == "Thanks, Ada.", (major, texts)
    assert len(model.requests) == 6  # per chat: the question's turn, the answer's


async def test_a_question_issued_is_answerable_on_another_instance_once_written(
    redis_url: str,
) -> None:
    """A turn's questions are issued to Redis in the background; before its end reaches the
    client (``TurnRun._free``) it waits for ``written()``, so a chat that answers at once on
    the other instance finds the question there (it was once refused as not waiting)."""
    from chunkbridge.gateway.stores.redis import RedisApprovalLedger
    from chunkbridge.gateway.turn.answers import issued_question

    log = get_logger("test")
    asker = RedisApprovalLedger(aioredis.Redis.from_url(redis_url), 60.0, log)
    other = RedisApprovalLedger(aioredis.Redis.from_url(redis_url), 60.0, log)
    question = issued_question("call_q-ask-1")
    for _ in range(20):  # the race the wait closes, each time
        asker.issue("s-written", question)
        await asker.written()
        found = await other.lookup("s-written", [question.approval_id])
        assert found == [question.tool_call_id]
        await other.redis.delete(other._key("s-written"))
    for ledger in (asker, other):
        await ledger.aclose()
        await ledger.redis.aclose()
