"""Test helpers in the spirit of h11's ConnectionPair: feed things, assert protocol meaning."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any, Literal

import pytest

from chunkbridge.gateway.registry import get_dialect
from chunkbridge.kit import TranslatorOptions, TurnInput
from chunkbridge.protocol_specs.chat_request import ChatRequest
from chunkbridge.translators.core.closing import CloseReason, CloseRequest
from chunkbridge.translators.core.guard import StreamGuard
from chunkbridge.translators.core.sse_codec import DONE_FRAME, SseDecoder, encode_chunks
from chunkbridge.translators.core.turn import Turn, TurnOptions
from chunkbridge.translators.core.validator import validate_sse


def guard_all(
    chunks: list[Any],
    *,
    target: int = 5,
    reason: CloseReason | None = CloseReason.COMPLETED,
    message_id: str | None = None,
    reset_step: bool = False,
    **close_kwargs: Any,
) -> tuple[list[dict[str, Any]], StreamGuard]:
    guard = StreamGuard(target=target, message_id=message_id, reset_step=reset_step)
    out: list[dict[str, Any]] = []
    for chunk in chunks:
        out += guard.feed(chunk)
    if reason is not None:
        out += guard.close(CloseRequest(reason, **close_kwargs))
    return out, guard


def types(chunks: list[dict[str, Any]]) -> list[str]:
    return [c["type"] for c in chunks]


def to_sse(chunks: list[dict[str, Any]]) -> bytes:
    return encode_chunks(chunks) + DONE_FRAME


def decode_sse(body: bytes) -> list[dict[str, Any]]:
    """An SSE body back to chunks (``[DONE]`` left out). ``json``, not orjson: like
    ``JSON.parse`` it takes integers beyond 64 bits."""
    events = SseDecoder().decode_bytes(body)
    return [json.loads(e.data) for e in events if e.data != "[DONE]"]


def assert_valid_for(body: bytes, *majors: int, reset_step: bool = False) -> None:
    for major in majors or (5, 6, 7):
        report = validate_sse(body, major, reset_step=reset_step and major == 7)
        assert report.ok, (major, [str(e) for e in report.errors], body[:2000])


def new_turn(dialect: str, *, target: int = 5, **options: Any) -> Turn:
    """A fresh turn of ``dialect`` (its translator built as the gateway builds it)."""
    description = get_dialect(dialect)
    options.setdefault("settings", description.settings())
    translator = description.translator(TranslatorOptions(**options))
    return Turn(translator, TurnOptions(target=target))


def translate(
    dialect: str, events: list[Any], *, target: int = 5, close: bool = True, **options: Any
) -> tuple[list[dict[str, Any]], Turn]:
    """Feed events (dicts, or raw str frames) to a fresh turn; the upstream ends at the end."""
    turn = new_turn(dialect, target=target, **options)
    out: list[dict[str, Any]] = []
    for event in events:
        out += turn.feed_frame(event) if isinstance(event, str) else turn.feed(event)
    if close:
        out += turn.upstream_ended()
    return out, turn


def end(turn: Turn, reason: CloseReason) -> list[dict[str, Any]]:
    """End a turn for ``reason`` as the driver would: the upstream's end is read by the turn."""
    if reason is CloseReason.UPSTREAM_CLOSED:
        return turn.upstream_ended()
    return turn.close(CloseRequest(reason))


def of_type(chunks: list[dict[str, Any]], chunk_type: str) -> list[dict[str, Any]]:
    return [c for c in chunks if c["type"] == chunk_type]


def text_of(chunks: list[dict[str, Any]]) -> str:
    return "".join(c["delta"] for c in chunks if c["type"] == "text-delta")


def text_part(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def provider_turn(
    settings_model: type[Any],
    messages: list[dict[str, Any]],
    body: dict[str, Any] | None = None,
    history: Literal["latest", "full"] = "latest",
    **settings: Any,
) -> TurnInput:
    """A provider dialect's turn: the request with ``messages`` (and extra ``body`` keys) and the
    dialect's settings; ``history`` as the gateway resolved it (provider dialects send it all)."""
    request = ChatRequest.model_validate({"id": "c1", "messages": messages, **(body or {})})
    return TurnInput(request, "s1", "run-1", settings_model(**settings), history)


def chat_reply(result: dict[str, Any]) -> dict[str, Any]:
    """The one assistant message of a ``chat_loop`` run (a second one would be a duplicate),
    after checking the chat ended ready without an error."""
    assert result["error"] is None and result["status"] == "ready", result
    roles = [m["role"] for m in result["messages"]]
    assert roles == ["user", "assistant"], roles
    message: dict[str, Any] = result["messages"][1]
    return message


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``chunkbridge ARGV`` in this process, as :func:`~chunkbridge.gateway.cli.main` is meant
    to be called by tests: (exit code, stdout, stderr). argparse's own exits (``--help``, usage
    errors) are exit codes here too. A subprocess would prove only that ``python -m chunkbridge``
    starts, which a few tests prove once."""
    from chunkbridge.gateway.cli import main

    capsys.readouterr()  # what the test printed before is not the command's
    try:
        code = main(list(argv))
    except SystemExit as exit:
        code = exit.code if isinstance(exit.code, int) else int(exit.code is not None)
    out, err = capsys.readouterr()
    return code, out, err


async def until(condition: Callable[[], object], seconds: float = 10) -> None:
    """Wait for ``condition()`` to hold — the event a test orders itself by, where a sleep would
    only guess how long it takes (checked every 10 ms; TimeoutError after ``seconds``)."""
    async with asyncio.timeout(seconds):
        while not condition():  # noqa: ASYNC110 (plain state of a server: no event to await)
            await asyncio.sleep(0.01)


async def stalled(count: Callable[[], int], quiet: float, within: float) -> int:
    """``count()`` once it has not grown for ``quiet`` seconds (at most ``within`` seconds): how
    far a sender got before back-pressure held it, without guessing how long that takes."""
    loop = asyncio.get_running_loop()
    deadline, last, since = loop.time() + within, count(), loop.time()
    while loop.time() - since < quiet and loop.time() < deadline:
        await asyncio.sleep(0.05)
        if count() != last:
            last, since = count(), loop.time()
    return last


def result_of(output: Any) -> Any:
    """A gateway tool's output — MCP's ``CallToolResult`` — as the tests compare it: its
    ``structuredContent`` when the server sent one, else its text; any other output as it is
    (the whole shape has tests of its own: ``tests/test_mcp_content.py``)."""
    if not isinstance(output, dict) or not isinstance(output.get("content"), list):
        return output
    if "structuredContent" in output:
        return output["structuredContent"]
    return "\n".join(b["text"] for b in output["content"] if b.get("type") == "text")
