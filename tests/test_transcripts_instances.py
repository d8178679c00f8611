"""Several instances, one transcript: two real gateway processes on one real PostgreSQL (and one
redis-server for resume) in front of an OpenAI-compatible model on 127.0.0.1. A chat written
through one instance is listed, loaded, continued and resumed through the other, with
``history = stored``: each instance builds the provider's conversation from the other's writes."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.routing import Route

from tests.gateway_harness import app_thread, free_ports
from tests.test_gateway_process import processes
from tests.test_transcripts import Provider, user

CHAT = "chat-1"


def provider_thread(provider: Provider) -> contextlib.AbstractContextManager[str]:
    """``provider`` served in a thread of its own (the test itself blocks)."""
    routes = [Route("/v1/chat/completions", provider.completions, methods=["POST"])]
    return app_thread(Starlette(routes=routes))


@contextmanager
def two_gateways(upstream: str, database: str, redis: str) -> Iterator[tuple[str, str]]:
    common = (
        *("--dialect", "openai-chat", "--upstream", upstream),
        *("--openai-chat-api-key", "sk-test", "--openai-chat-model", "m"),
        *("--store", "postgres", "--store-url", database, "--history", "stored"),
        *("--resume", "redis", "--redis-url", redis, "--log-level", "warning"),
    )
    ports = free_ports(2)
    commands = [
        (("serve", "--port", str(port), *common), f"http://127.0.0.1:{port}/healthz")
        for port in ports
    ]
    with processes(*commands):  # (started together: the store's migration takes a lock)
        yield f"http://127.0.0.1:{ports[0]}", f"http://127.0.0.1:{ports[1]}"


def chat(base: str, message: dict[str, Any]) -> httpx.Response:
    """One turn, the client sending only its last message."""
    body = {"id": CHAT, "message": message}
    response = httpx.post(f"{base}/api/sessions/s1/chat", json=body, timeout=30, trust_env=False)
    assert response.status_code == 200, response.text
    return response


def get(base: str, path: str) -> Any:
    response = httpx.get(f"{base}/api/sessions/s1{path}", timeout=20, trust_env=False)
    assert response.status_code == 200, response.text
    return response.json() if response.content else None


def texts(request: dict[str, Any]) -> list[str]:
    return [str(m.get("content")) for m in request["messages"] if m["role"] != "system"]


def test_a_chat_written_on_one_instance_is_listed_loaded_and_continued_on_another(
    postgres_url: str, redis_url: str, real_clients
) -> None:
    provider = Provider(tool_turns=(3,), slow_turns=(5,))
    mine: list[dict[str, Any]] = []  # the client's own copy of the conversation

    def turn(base: str, message: dict[str, Any]) -> None:
        continued = mine[-1] if message["role"] == "assistant" else None
        if continued is None:
            mine.append(message)
        response = chat(base, message)
        verdict = real_clients.check(response.content, (5,), continued)[5]
        assert verdict.ok and verdict.message is not None, verdict.fatal
        if continued is None:
            mine.append(verdict.message)
        else:
            mine[-1] = verdict.message

    with (
        provider_thread(provider) as upstream,
        two_gateways(upstream, postgres_url, redis_url) as (a, b),
    ):
        turn(a, user("u1", "question 1"))
        (listed,) = get(b, "/chats?limit=10")["chats"]
        assert (listed["id"], listed["title"], listed["messages"]) == (CHAT, "question 1", 2)
        assert get(b, f"/chat/{CHAT}/messages") == mine  # written on A, loaded on B

        turn(b, user("u2", "question 2"))  # continued on B from A's copy
        assert texts(provider.requests[-1]) == ["question 1", "answer 1", "question 2"]

        turn(a, user("u3", "look it up"))  # a tool call the app answers…
        answered = {**mine[-1], "parts": [dict(p) for p in mine[-1]["parts"]]}
        (call,) = [p for p in answered["parts"] if p.get("state") == "input-available"]
        call.update(state="output-available", output={"found": 42})
        mine[-1] = answered
        turn(b, answered)  # …on the other instance: B's stored message takes the answer
        assert provider.requests[-1]["messages"][-1]["role"] == "tool"
        assert get(a, f"/chat/{CHAT}/messages") == mine

        # a slow answer on A; a page reloaded onto B meanwhile: the stored conversation with
        # the new question, and the running answer followed to its end through redis
        running = threading.Thread(target=turn, args=(a, user("u5", "take your time")))
        running.start()
        deadline = time.monotonic() + 10
        while len(provider.requests) < 5 and time.monotonic() < deadline:
            time.sleep(0.02)  # the slow answer has begun
        up_to_u5 = [m["id"] for m in mine]  # the answer to u5 is not in it yet
        reloaded = get(b, f"/chat/{CHAT}/messages")
        while [m["id"] for m in reloaded] != up_to_u5:  # u5 is stored as its turn starts
            assert time.monotonic() < deadline, reloaded
            time.sleep(0.02)
            reloaded = get(b, f"/chat/{CHAT}/messages")
        assert running.is_alive()  # reloaded mid-answer
        resumed = httpx.get(f"{b}/api/sessions/s1/chat/{CHAT}/stream", timeout=30, trust_env=False)
        running.join(30)
        final = get(b, f"/chat/{CHAT}/messages")
    assert resumed.status_code == 200
    verdict = real_clients.check(resumed.content, (5,))[5]
    assert verdict.ok and verdict.message == mine[-1]
    assert final == mine
    assert "".join(p.get("text", "") for p in mine[-1]["parts"]) == "".join(
        f"w{i} " for i in range(40)
    )
