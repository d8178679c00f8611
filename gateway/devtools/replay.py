"""Replay a recorded upstream session through the turn driver into an SSE body.

The recording (:mod:`chunkbridge.gateway.devtools.recordings`) becomes a
:class:`~chunkbridge.gateway.transports.replay. ReplayUpstream` and runs through the same
:class:`~chunkbridge.gateway.turn.driver.TurnDriver` and
:class:`~chunkbridge.translators.core.turn.Turn` as a live turn, so a golden file checks the code
that serves users. Ids are deterministic (a counter per kind), so the output is byte-identical for
the same input; the body is what the gateway writes after its ``: stream-open`` comment.
"""

from __future__ import annotations

import difflib
from collections.abc import Coroutine, Iterable
from pathlib import Path
from typing import Any

from chunkbridge.gateway.devtools.recordings import read_frames
from chunkbridge.gateway.registry import get_dialect
from chunkbridge.gateway.transports.replay import ReplayUpstream
from chunkbridge.gateway.turn.driver import REPLAY_SETTINGS, TurnDriver
from chunkbridge.kit import TranslatorOptions, TurnInput, UnknownEventPolicy
from chunkbridge.protocol_specs.chat_request import ChatRequest
from chunkbridge.translators.core.client_model import KnownToolCall
from chunkbridge.translators.core.sse_codec import DONE_FRAME
from chunkbridge.translators.core.turn import Turn, TurnOptions

__all__ = [
    "continued_tools",
    "golden_diff",
    "replay_file",
    "replay_frames",
    "run_without_waiting",
]


def run_without_waiting(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine that never has to wait (a replay: every frame is already there) to its
    end in one step, without an event loop — so a replay works inside a running loop too."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    raise RuntimeError("the replay waited for something: its upstream never should")


def _continuation(message: dict[str, Any]) -> TurnInput:
    if not isinstance(message, dict) or message.get("role") != "assistant":
        raise ValueError("not an assistant UIMessage")
    return TurnInput(ChatRequest.model_validate({"messages": [message]}), "", "")


def continued_tools(message: dict[str, Any]) -> list[KnownToolCall]:
    """The tool parts of an assistant ``UIMessage`` a response continues, as the stream guard
    knows them in a live continuation (``ValueError`` when it is no such message)."""
    return _continuation(message).known_tool_calls()


def replay_frames(
    dialect: str,
    frames: Iterable[str | bytes],
    *,
    target: int = 5,
    reset_step: bool = False,
    unknown_events: UnknownEventPolicy = UnknownEventPolicy.FORWARD,
    message_id: str | None = None,
    settings: Any = None,
    continued: dict[str, Any] | None = None,
) -> bytes:
    """The SSE body (``[DONE]`` included) a recorded session becomes, for the client ``target``
    and ``reset_step`` say (:class:`~chunkbridge.translators.core.turn.TurnOptions`);
    ``continued``: the assistant message it continues (spec §5.4), whose id it keeps, whose
    tool parts it may refer to and whose denied approvals it settles first, as a live
    continuation does."""
    description = get_dialect(dialect)
    if settings is None:
        settings = description.settings()
    translator = description.translator(
        TranslatorOptions(unknown_events=unknown_events, settings=settings)
    )
    options = TurnOptions(target=target, reset_step=reset_step, message_id=message_id)
    if continued is not None:
        continuation = _continuation(continued)
        answers = continuation.approval_answers
        options = TurnOptions(
            target=target,
            reset_step=reset_step,
            message_id=message_id or str(continued.get("id") or "") or None,
            known_tools=continuation.known_tool_calls(),
            denied_calls=[answer.tool_call_id for answer in answers if not answer.approved],
        )
    turn = Turn(translator, options)
    driver = TurnDriver(ReplayUpstream(frames), turn, REPLAY_SETTINGS)
    out: list[bytes] = []

    async def collect(body: bytes) -> None:
        out.append(body)

    run_without_waiting(driver.run(collect))
    out.append(DONE_FRAME)
    return b"".join(out)


def replay_file(dialect: str, path: Path, *, target: int = 5, **options: Any) -> bytes:
    return replay_frames(dialect, read_frames(path), target=target, **options)


def golden_diff(expected: bytes, actual: bytes, name: str) -> str:
    """A unified diff of two SSE bodies ('' when equal), one event per line."""
    if expected == actual:
        return ""
    a = expected.decode("utf-8", "replace").splitlines(keepends=True)
    b = actual.decode("utf-8", "replace").splitlines(keepends=True)
    return "".join(difflib.unified_diff(a, b, fromfile=name, tofile="replay output"))
