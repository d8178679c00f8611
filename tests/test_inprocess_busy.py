"""``busy`` for an app's own streams: a host app answers with ``UIStreamResponse`` over the real
``openai`` SDK, the gateway (``resume = memory``) mounted beside it, in front of a model
provider on 127.0.0.1 that records when each request came and how each stream ended. The order
it records proves the policy and that a message which waits starts its upstream work only once
let in: with a callable the request goes out after the answer it waited for ended. The line is
the gateway's own (its POSTs and the app's streams queue in one order, and interrupt each
other); events given live cannot wait and are refused and closed; ``steer`` waits as
``queue``; the stale guard holds. Every body is judged by the real ai 5, 6 and 7 clients, and
the real chats of ai 5, 6 and 7 send while the answer streams."""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import orjson
import pytest
from openai import AsyncOpenAI
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from chunkbridge import (
    Gateway,
    parse_chat_request,
    request_body,
    ui_stream,
)
from tests.gateway_harness import free_ports, uvicorn_server
from tests.helpers import decode_sse, text_of, until
from tests.inprocess_host import SETTINGS, gateway_for, host
from tests.test_busy_one_instance import WORDS, answer_text, body, queue_positions, user
from tests.test_busy_one_instance import Pending as BusyPending
from tests.test_gateway_process import process

pytestmark = pytest.mark.conformance

#: What the messages of a test say, in the order they are sent.
ORDER = ["one", "two", "three", "four"]


class Provider:
    """An OpenAI-compatible model: each request is answered ``<text>0 <text>1 …`` (``text``:
    its last user message) a word every ``pause`` seconds; ``log`` holds (time, "request" |
    "end" | "closed", text) in order — ``closed``: its client closed the stream before its
    end — and ``requests`` the bodies."""

    def __init__(self, pause: float = 0.05) -> None:
        self.pause = pause
        self.log: list[tuple[float, str, str]] = []
        self.requests: list[dict[str, Any]] = []
        self.words = 0

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/chat/completions", self._answer, methods=["POST"])])

    async def _answer(self, request: Request) -> Response:
        sent = orjson.loads(await request.body())
        self.requests.append(sent)
        text = _text(sent["messages"][-1]["content"])
        self.log.append((time.monotonic(), "request", text))
        return StreamingResponse(self._stream(text), media_type="text/event-stream")

    async def _stream(self, text: str) -> AsyncIterator[bytes]:
        ended = False
        try:
            yield _sse(_chunk(text, {"role": "assistant", "content": ""}))
            for i in range(WORDS):
                await asyncio.sleep(self.pause)
                yield _sse(_chunk(text, {"content": f"{text}{i} "}))
                self.words += 1
            yield _sse(_chunk(text, {}, "stop")) + b"data: [DONE]\n\n"
            ended = True
        finally:
            self.log.append((time.monotonic(), "end" if ended else "closed", text))

    def at(self, what: str, text: str) -> float:
        return next(t for t, w, x in self.log if w == what and x == text)

    def order(self, what: str) -> list[str]:
        return [x for _, w, x in self.log if w == what]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content)


def _chunk(text: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {"id": f"c-{text}", "object": "chat.completion.chunk", "created": 0, "model": "m",
            "choices": [choice]}  # fmt: skip


def _sse(chunk: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(chunk) + b"\n\n"


@contextlib.asynccontextmanager
async def world(provider: Provider, **settings: Any) -> AsyncIterator[tuple[str, Gateway]]:
    """The provider and the host app served; yields (the app's base URL, its gateway)."""
    settings = {"busy": "queue", "resume": "memory", "keepalive_interval": 0.3, **settings}
    async with uvicorn_server(provider.app()) as model:
        gateway = gateway_for(model, **settings)
        client = AsyncOpenAI(base_url=f"{model}/v1", api_key="sk-test", max_retries=0)
        async with client, uvicorn_server(host(gateway, client)) as base:
            yield base, gateway


def app_url(base: str, events: str = "callable") -> str:
    return f"{base}/ai/s/chat?events={events}"


def gateway_url(base: str) -> str:
    return f"{base}/gw/api/sessions/s/chat"


class Pending(BusyPending):
    """A POST read as its bytes come, to any URL."""

    def __init__(self, url: str, payload: dict[str, Any]) -> None:
        super().__init__("", payload, url=url)

    @property
    def chunks(self) -> list[dict[str, Any]]:
        return decode_sse(self.content)


async def send(url: str, payload: dict[str, Any]) -> httpx.Response:
    async with httpx.AsyncClient(timeout=30, trust_env=False) as client:
        return await client.post(url, json=payload)


async def busy_counts(base: str) -> dict[str, float]:
    async with httpx.AsyncClient(timeout=10, trust_env=False) as client:
        text = (await client.get(f"{base}/gw/metrics")).text
    found = re.findall(r'^chunkbridge_busy_total\{event="(\w+)"\} (\S+)$', text, re.M)
    return {event: float(value) for event, value in found}


def judge(real_clients: Any, bodies: list[bytes], texts: list[str]) -> None:
    """Every body, by the real ai 5, 6 and 7: valid, ``stop``, the text it answers."""
    for text, verdicts in zip(texts, real_clients.check_many(bodies), strict=True):
        for major, verdict in verdicts.items():
            assert verdict.ok and verdict.finish_reason == "stop", (text, major, verdict.fatal)
            assert verdict.text() == answer_text(text), (text, major)
            assert not verdict.parts("data-queue")  # transient: never in the message


def ran_in_line(real_clients: Any, provider: Provider, responses: list[Pending]) -> None:
    """The answers ran in the order they were sent, each upstream request once the answer
    before had ended (``responses`` answer "one", "two"…: :data:`ORDER`), each having said
    its place; every body judged."""
    order = ORDER[: len(responses)]
    assert [r.status_code for r in responses] == [200] * len(responses)
    assert provider.order("request") == order
    assert provider.order("end") == order  # each ran whole
    for before, after in zip(order, order[1:], strict=False):  # its upstream: once let in
        assert provider.at("request", after) >= provider.at("end", before), (before, after)
    waited = [queue_positions(r.chunks) for r in responses]
    assert waited == [list(range(n, -1, -1)) if n else [] for n in range(len(responses))]
    judge(real_clients, [r.content for r in responses], order)


async def test_streams_sent_during_a_turn_wait_in_order_and_open_only_once_let_in(
    real_clients: Any,
) -> None:
    provider = Provider()
    async with world(provider) as (base, _):
        first = Pending(app_url(base), body(user("one")))
        await until(lambda: provider.log, 10)
        second = Pending(app_url(base), body(user("one"), user("two")))
        await second.in_line()
        third = Pending(app_url(base, "request"), body(user("one"), user("two"), user("three")))
        await asyncio.gather(first.task, second.task, third.task)
        counts = await busy_counts(base)
    ran_in_line(real_clients, provider, [first, second, third])
    assert b": keep-alive\n\n" in third.content  # (keepalive_interval 0.3 s)
    for waited in (second, third):
        starts = [c for c in waited.chunks if c["type"] == "start"]
        assert waited.chunks[0]["type"] == "start" and len({c["messageId"] for c in starts}) == 1
    assert counts == {"queued": 2, "ran": 2}


async def test_the_line_is_the_gateways_own_its_posts_and_the_apps_streams_in_one_order(
    real_clients: Any,
) -> None:
    provider = Provider()
    async with world(provider) as (base, _):
        first = Pending(gateway_url(base), body(user("one")))  # the gateway's own turn
        await until(lambda: provider.log, 10)
        second = Pending(app_url(base), body(user("one"), user("two")))
        await second.in_line()
        third = Pending(gateway_url(base), body(user("one"), user("two"), user("three")))
        await third.in_line()
        fourth = Pending(app_url(base), body(user("one"), user("four")))
        await asyncio.gather(first.task, second.task, third.task, fourth.task)
    ran_in_line(real_clients, provider, [first, second, third, fourth])


async def test_a_full_line_is_refused_as_the_gateway_refuses_it() -> None:
    provider = Provider(pause=0.1)
    async with world(provider, queue_max=1) as (base, _):
        first = Pending(app_url(base), body(user("one")))
        await until(lambda: provider.log, 10)
        waiting = Pending(app_url(base), body(user("one"), user("two")))
        await waiting.in_line()
        full = await send(app_url(base), body(user("one"), user("three")))
        regenerate = await send(
            app_url(base), {**body(user("one")), "trigger": "regenerate-message"}
        )
        await asyncio.gather(first.task, waiting.task)
        assert await busy_counts(base) == {"queued": 1, "full": 1, "ran": 1}
    assert (full.status_code, full.headers["content-type"]) == (409, "text/plain; charset=utf-8")
    assert full.text == (
        "This session is answering and too many messages wait already; send yours once an "
        "answer has come."
    )
    assert regenerate.status_code == 409 and "already answering" in regenerate.text
    assert provider.order("request") == ["one", "two"]  # the refused never reached it


@pytest.mark.parametrize("busy", ["queue", "interrupt"])
async def test_a_live_stream_that_would_wait_is_refused_and_closed_and_runs_when_free(
    busy: str, real_clients: Any
) -> None:
    """Events given live (the SDK's request sent before the response was built) cannot wait:
    409 saying so, the stream closed, nothing interrupted for it — and the same live stream
    runs when the session is free."""
    provider = Provider()
    async with world(provider, busy=busy) as (base, _):
        first = Pending(app_url(base), body(user("one")))
        await until(lambda: provider.words >= 2, 10)
        refused = await send(app_url(base, "live"), body(user("one"), user("two")))
        await until(lambda: "two" in provider.order("closed"), 2)  # (the SDK's stream closed)
        await first.task
        free = await send(app_url(base, "live"), body(user("one"), user("three")))
        counts = await busy_counts(base)
    assert refused.status_code == 409
    assert refused.text == (
        "This session is already answering, and this message cannot wait its turn: its answer "
        "was started before it was let in (the app should give UIStreamResponse a callable "
        "that starts it)."
    )
    assert provider.order("end") == ["one", "three"]  # one was not interrupted
    assert "interruptedBy" not in orjson.dumps(first.chunks[-1]).decode()
    assert free.status_code == 200 and not queue_positions(decode_sse(free.content))
    assert counts == {}  # it never joined the line
    judge(real_clients, [first.content, free.content], ["one", "three"])


@pytest.mark.parametrize(
    ("running", "interrupting"), [("app", "app"), ("gateway", "app"), ("app", "gateway")]
)
async def test_interrupt_stops_the_running_turn_whichever_kind_and_the_message_runs(
    running: str, interrupting: str, real_clients: Any
) -> None:
    provider = Provider(pause=0.1)
    url = {"app": app_url, "gateway": gateway_url}
    async with world(provider, busy="interrupt") as (base, _):
        first = Pending(url[running](base), body(user("one")))
        await until(lambda: provider.words >= 2, 10)  # a few words in
        sent = time.monotonic()
        second = await send(url[interrupting](base), body(user("one"), user("two")))
        await first.task
    assert provider.order("request") == ["one", "two"]
    assert provider.order("closed") == ["one"] and provider.order("end") == ["two"]
    assert provider.at("request", "two") - sent <= 1.5
    assert first.chunks[-1]["messageMetadata"] == {"interruptedBy": "u-two"}
    assert queue_positions(decode_sse(second.content)) == [1, 0]
    verdicts = real_clients.check_many([first.content, second.content])
    for major, verdict in verdicts[0].items():
        assert verdict.ok and 0 < len(verdict.text()) < len(answer_text("one")), major
        assert verdict.message["metadata"]["interruptedBy"] == "u-two", major
    for major, verdict in verdicts[1].items():
        assert verdict.ok and verdict.text() == answer_text("two"), major


async def test_steer_waits_as_queue_with_the_gateways_log_line(
    real_clients: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    provider = Provider()
    async with world(provider, busy="steer") as (base, _):
        first = Pending(app_url(base), body(user("one")))
        await until(lambda: provider.log, 10)
        second = await send(app_url(base), body(user("one"), user("two")))
        await first.task
    logged = capsys.readouterr().out
    assert provider.order("end") == ["one", "two"]
    assert provider.at("request", "two") >= provider.at("end", "one")
    assert queue_positions(decode_sse(second.content)) == [1, 0]
    assert second.headers["x-host"] == "app"  # the app's own headers, on a wait too
    (line,) = [x for x in logged.splitlines() if "busy.steer_as_queue" in x]
    assert "reason='no loop'" in line or 'reason="no loop"' in line, line
    judge(real_clients, [first.content, second.content], ["one", "two"])


async def test_the_answer_waited_for_is_given_whole_to_a_callable_that_takes_the_request() -> None:
    """The client sends the running answer cut where it was; a callable of one argument is
    given the request with the server's copy, whole (one of none builds on the client's)."""
    provider = Provider()
    async with world(provider) as (base, _):
        first = Pending(app_url(base), body(user("one")))
        await until(lambda: provider.words >= 1, 10)
        answer_id = first.chunks[0]["messageId"]
        cut = {
            "id": answer_id,
            "role": "assistant",
            "parts": [{"type": "text", "text": "one0 ", "state": "streaming"}],
        }
        given = Pending(app_url(base, "request"), body(user("one"), cut, user("two")))
        await given.in_line()
        plain = Pending(app_url(base), body(user("one"), cut, user("three")))
        await asyncio.gather(first.task, given.task, plain.task)
    assert provider.order("request") == ["one", "two", "three"]
    sent = [r["messages"] for r in provider.requests]
    assert [m["role"] for m in sent[1]] == ["user", "assistant", "user"]
    assert _text(sent[1][1]["content"]) == answer_text("one")
    assert _text(sent[2][1]["content"]) == "one0 "  # the client's copy, as the app built it


async def test_expected_turn_id_must_be_the_chats_newest_answer() -> None:
    """The stale guard, before any waiting: the running answer of an app's stream, then the
    last one once it ended; the gateway's POSTs are checked against the app's answers too."""
    provider = Provider()
    async with world(provider) as (base, _):
        first = Pending(app_url(base), body(user("one")))
        await until(lambda: b'"messageId"' in first.content, 10)
        running = first.chunks[0]["messageId"]
        stale = await send(app_url(base), {**body(user("one"), user("two")),
                                           "expectedTurnId": "msg_old"})  # fmt: skip
        fresh = await send(app_url(base), {**body(user("one"), user("two")),
                                           "expectedTurnId": running})  # fmt: skip
        await first.task
        after = await send(gateway_url(base), {**body(user("one"), user("three")),
                                               "expectedTurnId": running})  # fmt: skip
        newest = decode_sse(fresh.content)[0]["messageId"]
        current = await send(gateway_url(base), {**body(user("one"), user("four")),
                                                 "expectedTurnId": newest})  # fmt: skip
        assert (await busy_counts(base))["stale"] == 2
    assert stale.status_code == 409 and "not seen yet" in stale.text
    assert fresh.status_code == 200 and queue_positions(decode_sse(fresh.content)) == [1, 0]
    assert after.status_code == 409 and "not seen yet" in after.text  # "two" answered since
    assert current.status_code == 200 and text_of(decode_sse(current.content))
    assert provider.order("request") == ["one", "two", "four"]


async def test_ui_stream_waits_its_turn_too_and_a_reader_that_leaves_leaves_the_line(
    real_clients: Any,
) -> None:
    """ui_stream, given its own ``message_id``: the wait and the turn say it; a second one
    whose reader leaves while it waits is out of the line, its callable never called."""
    provider = Provider()
    async with world(provider) as (base, gateway):
        first = Pending(app_url(base), body(user("one")))
        await until(lambda: provider.log, 10)
        client = AsyncOpenAI(base_url=_model_of(gateway), api_key="sk-test", max_retries=0)

        def stream(text: str) -> Any:  # (an async generator: it has aclose)
            chat = parse_chat_request(body(user("one"), user(text)), gateway=gateway)

            def opens() -> Any:
                body = request_body(chat, dialect="openai-chat", settings=SETTINGS)
                return client.chat.completions.create(**body)

            return ui_stream(opens, dialect="openai-chat", gateway=gateway, request=chat,
                             session_id="s", message_id=f"msg-{text}")  # fmt: skip

        async with client:
            waited = bytearray()
            waiting = asyncio.create_task(read_into(stream("two"), waited))
            await until(lambda: b'"position":1' in waited, 10)
            leaving, seen = stream("gone"), b""
            async for piece in leaving:
                seen += piece
                if b'"position":2' in seen:
                    break
            await leaving.aclose()  # what a framework does when its client goes away
            await waiting
        await first.task
        counts = await busy_counts(base)
    assert provider.order("request") == ["one", "two"]
    assert provider.at("request", "two") >= provider.at("end", "one")
    assert queue_positions(decode_sse(bytes(waited))) == [1, 0]
    starts = [c["messageId"] for c in decode_sse(bytes(waited)) if c["type"] == "start"]
    assert starts == ["msg-two", "msg-two"]  # the wait's, then the turn's
    assert counts == {"queued": 2, "left": 1, "ran": 1}
    judge(real_clients, [first.content, bytes(waited)], ["one", "two"])


async def read_into(pieces: AsyncIterator[bytes], into: bytearray) -> None:
    async for piece in pieces:
        into += piece


def _model_of(gateway: Gateway) -> str:
    return f"{gateway.config.upstream}/v1"


async def test_reject_is_todays_409_and_a_callable_that_is_refused_is_never_called() -> None:
    provider = Provider(pause=0.1)
    async with world(provider, busy="reject") as (base, _):
        first = Pending(app_url(base), body(user("one")))
        await until(lambda: provider.log, 10)
        refused = await send(app_url(base), body(user("one"), user("two")))
        await first.task
    assert refused.status_code == 409
    assert refused.text == "This session is already answering; wait for it or stop it first."
    assert provider.order("request") == ["one"]
    assert text_of(first.chunks) == answer_text("one")


@pytest.mark.parametrize("major", [7, 6, 5])
async def test_the_ai_sdk_chat_that_sends_while_the_answer_streams_gets_every_answer(
    major: int, real_clients: Any
) -> None:
    provider = Provider()
    async with world(provider) as (base, _):
        result = await real_clients.busy_chat(
            api=app_url(base, "request"),
            major=major,
            chatId="chat1",
            texts=["one", "two", "three"],
            gapMs=100,
        )
    assert result["status"] == "ready" and not result["errors"], result
    order = ["one", "two", "three"]
    assert provider.order("request") == order
    for before, after in zip(order, order[1:], strict=False):
        assert provider.at("request", after) >= provider.at("end", before), (before, after)
    shown = [(m["role"][0], m["parts"][-1].get("text")) for m in result["messages"]]
    assert [x for x in shown if x[0] == "u"] == [("u", text) for text in order]
    assert [x for x in shown if x[0] == "a"] == [("a", answer_text(text)) for text in order]
    waited = [queue_positions(decode_sse(b)) for b in result["bodies"]]
    assert waited == [[], [1, 0], [2, 1, 0]]
    for verdicts in real_clients.check_many(result["bodies"]):
        for checked, verdict in verdicts.items():
            assert verdict.ok and verdict.finish_reason == "stop", (checked, verdict.fatal)
    # the chat sent the answer it waited for cut; the model got it whole (the callable takes
    # the request)
    second = provider.requests[1]["messages"]
    assert [_text(m["content"]) for m in second] == ["one", answer_text("one"), "two"]
    third = provider.requests[2]["messages"]
    assert [_text(m["content"]) for m in third][-2:] == [answer_text("two"), "three"]


@contextlib.contextmanager
def two_hosts(model: str, redis_url: str, busy: str) -> Iterator[tuple[str, str]]:
    """Two processes of the host app (:mod:`tests.inprocess_host`), its gateway on one
    redis-server: their base URLs."""
    ports = free_ports(2)
    flags = ("--model", model, "--redis-url", redis_url, "--busy", busy)
    with contextlib.ExitStack() as stack:
        for port in ports:
            ready = f"http://127.0.0.1:{port}/gw/healthz"
            stack.enter_context(
                process("--port", str(port), *flags, module="tests.inprocess_host", ready_url=ready)
            )
        yield f"http://127.0.0.1:{ports[0]}", f"http://127.0.0.1:{ports[1]}"


@pytest.mark.slow
async def test_over_two_instances_the_apps_streams_and_the_gateways_posts_share_one_line(
    redis_url: str, real_clients: Any
) -> None:
    """The line is Redis's: app streams and a gateway POST, spread over two host processes,
    run in the order they came, each upstream request after the previous answer ended."""
    provider = Provider(pause=0.08)
    async with uvicorn_server(provider.app()) as model:
        with two_hosts(model, redis_url, "queue") as (a, b):
            first = Pending(app_url(a), body(user("one")))
            await until(lambda: provider.log, 10)
            second = Pending(app_url(b), body(user("one"), user("two")))
            await second.in_line()
            third = Pending(gateway_url(a), body(user("one"), user("two"), user("three")))
            await third.in_line()
            fourth = Pending(app_url(b, "request"), body(user("one"), user("four")))
            await asyncio.gather(first.task, second.task, third.task, fourth.task)
    ran_in_line(real_clients, provider, [first, second, third, fourth])


@pytest.mark.slow
async def test_over_two_instances_an_apps_stream_interrupts_one_running_on_the_other(
    redis_url: str, real_clients: Any
) -> None:
    provider = Provider(pause=0.1)
    async with uvicorn_server(provider.app()) as model:
        with two_hosts(model, redis_url, "interrupt") as (a, b):
            first = Pending(app_url(a), body(user("one")))
            await until(lambda: provider.words >= 2, 10)
            second = await send(app_url(b), body(user("one"), user("two")))
            await first.task
    assert provider.order("request") == ["one", "two"]
    assert provider.order("closed") == ["one"] and provider.order("end") == ["two"]
    assert first.chunks[-1]["messageMetadata"]["interruptedBy"] == "u-two"
    verdicts = real_clients.check_many([first.content, second.content])
    for major, verdict in verdicts[0].items():
        assert verdict.ok and 0 < len(verdict.text()) < len(answer_text("one")), major
    for major, verdict in verdicts[1].items():
        assert verdict.ok and verdict.text() == answer_text("two"), major
