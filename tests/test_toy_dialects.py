"""Two toy dialects, one per transport, added the way a third-party package adds one: their own
modules and fixtures under tests/toy_dialects/, registered by an entry point (a dist-info folder
on the path), and nothing else — no line of gateway/ knows them. Each runs live behind the real
gateway and through the CLI, and the real ai 5/6/7 clients judge what comes out."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from chunkbridge.gateway.registry import registry
from tests.gateway_harness import (
    ScriptedUpstream,
    events,
    http_upstream,
    post,
    running_gateway,
    sse_response,
    user_body,
)
from tests.helpers import decode_sse, of_type, run_cli, text_of

ROOT = Path(__file__).resolve().parents[1]
TOY = Path(__file__).resolve().parent / "toy_dialects"
RECORDINGS = sorted(TOY.glob("fixtures/*/*.jsonl"))


@pytest.fixture
def toy_dialects(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The toy package on the path, as if pip-installed: the registry finds its entry points."""
    monkeypatch.syspath_prepend(str(TOY))
    registry.cache_clear()
    yield
    registry.cache_clear()


def test_the_cli_lists_them_and_generates_their_setting_flags(
    toy_dialects: None, capsys: pytest.CaptureFixture[str]
) -> None:
    code, listing, _ = run_cli(capsys, "dialects")
    assert code == 0
    assert re.search(r"^acme +ws +Acme agent events", listing, re.M), listing
    assert re.search(r"^acme-sse +http +Acme model API", listing, re.M), listing
    assert re.search(r"^agent-ops-v2 +ws ", listing, re.M), listing  # built-ins alike
    code, help_text, _ = run_cli(capsys, "serve", "--help")
    assert code == 0
    assert "--acme-sse-model" in help_text and "--acme-sse-api-key" in help_text


@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_their_recordings_replay_into_their_goldens(
    toy_dialects: None, chunkbridge_golden: Any, recording: Path
) -> None:
    chunkbridge_golden(recording.parent.name, recording)


@pytest.mark.conformance
def test_their_goldens_are_accepted_by_the_real_clients(real_clients: Any) -> None:
    bodies = [r.with_suffix(".sse").read_bytes() for r in RECORDINGS]
    for recording, verdicts in zip(RECORDINGS, real_clients.check_many(bodies), strict=True):
        for major, verdict in verdicts.items():
            assert verdict.ok, (recording.stem, major, verdict.fatal)


async def test_the_websocket_toy_runs_live(toy_dialects: None, real_clients: Any) -> None:
    async with (
        ScriptedUpstream() as up,
        running_gateway(upstream=up.url, dialect="acme") as (base, _),
    ):
        up.scripts["done"] = events(
            {"type": "token", "text": "Hi "}, {"type": "token", "text": "there"}, {"type": "done"}
        )

        async def endless(ws: Any, upstream: ScriptedUpstream, session: str) -> None:
            for _ in range(500):  # bounded: 5 s
                await upstream.send(ws, session, {"type": "token", "text": "more "})
                await asyncio.sleep(0.01)
                if any(f.get("op") == "cancel" for f in upstream.received[session]):
                    return

        up.scripts["stop"] = endless
        response = await post(base, "done", user_body("Say hi"))
        async with httpx.AsyncClient(trust_env=False) as client:
            url = f"{base}/api/sessions/stop/chat"
            async with client.stream("POST", url, json=user_body()) as streaming:
                async for _ in streaming.aiter_bytes():
                    break
        await asyncio.wait_for(up.closed["stop"].wait(), 5)
    prompt = up.received["done"][0]
    assert prompt["op"] == "ask" and prompt["text"] == "Say hi" and prompt["run"]
    cancel = up.received["stop"][-1]
    assert cancel == {"op": "cancel", "run": up.received["stop"][0]["run"]}
    for major, verdict in real_clients.check(response.content).items():
        assert verdict.ok and verdict.text() == "Hi there", (major, verdict.fatal)
        assert verdict.finish_reason == "stop"


class AcmeApi:
    """A fake Acme model API: checks the request, streams content blocks as SSE."""

    def __init__(self) -> None:
        self.requests: list[tuple[dict[str, Any], str | None]] = []

    async def respond(self, request: Request) -> Response:
        body = orjson.loads(await request.body())
        self.requests.append((body, request.headers.get("x-acme-key")))
        if body["model"] != "acme-2":
            return JSONResponse({"error": {"message": f"no model {body['model']}"}}, 404)
        recording = TOY / "fixtures" / "acme-sse" / "blocks-and-tool.jsonl"
        return sse_response([line.encode() for line in recording.read_text().splitlines()], 0.005)


async def test_the_http_sse_toy_runs_live_with_its_own_settings(
    toy_dialects: None, real_clients: Any
) -> None:
    api = AcmeApi()
    settings = {"acme-sse": {"model": "acme-2", "api_key": "k-123"}}
    async with (
        http_upstream("/v1/respond", api.respond) as url,
        running_gateway(upstream=url, dialect="acme-sse", dialect_settings=settings) as (base, _),
    ):
        response = await post(base, "s", user_body("Weather in Oslo?"))
    body, key = api.requests[0]
    assert key == "k-123" and body == {
        "model": "acme-2",
        "input": [{"role": "user", "text": "Weather in Oslo?"}],
    }
    chunks = decode_sse(response.content)
    assert text_of(chunks) == "Checking the forecast."
    assert of_type(chunks, "tool-input-available")[0]["input"] == {"city": "Oslo"}
    for major, verdict in real_clients.check(response.content).items():
        assert verdict.ok and verdict.finish_reason == "tool-calls", (major, verdict.fatal)
        (reasoning,) = verdict.parts("reasoning")
        assert reasoning["text"] == "The user wants the weather."
        assert reasoning["providerMetadata"] == {"acme": {"signature": "sig-abc"}}
        assert verdict.message is not None
        assert verdict.message["metadata"]["usage"] == {"inputTokens": 21, "outputTokens": 13}


async def test_the_http_sse_toy_reports_a_refused_request_in_the_stream(
    toy_dialects: None,
) -> None:
    api = AcmeApi()
    async with (
        http_upstream("/v1/respond", api.respond) as url,
        running_gateway(upstream=url, dialect="acme-sse") as (base, _),
    ):
        response = await post(base, "s")
    assert api.requests[0][1] is None  # no key configured, none sent
    assert of_type(decode_sse(response.content), "error")[0]["errorText"] == "no model acme-1"


def test_the_docs_show_the_toy_dialects_as_they_are() -> None:
    """The examples of docs/writing-a-dialect.md are these modules: every line it shows is a
    line of them, so the documented code is code that runs in this suite."""
    page = (ROOT / "docs" / "writing-a-dialect.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", page, re.S)
    assert len(blocks) == 2, "one WebSocket and one HTTP-SSE example"
    sources = [(TOY / name).read_text() for name in ("acme_dialect.py", "acme_sse_dialect.py")]
    for block, source in zip(blocks, sources, strict=True):
        lines = {line.strip() for line in source.splitlines()}
        for line in block.splitlines():
            if line.strip() and not line.strip().startswith("# …"):  # an elision
                assert line.strip() in lines, line
