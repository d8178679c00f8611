"""What a turn writes to the transcript store, and the stored conversation it starts from.

:func:`stored_request` (``history = stored``) replaces the request's messages by the server's
copy of the chat (:mod:`chunkbridge.gateway.turn.history`) before the turn opens upstream.
:class:`TurnTranscript` records the turn: when it starts, the user message (or, for a
continuation, the stored message with the answers applied, ``streaming`` until the turn
ends); when it ends, the answer as the client has it — the turn's own
:class:`~chunkbridge.translators.core.message_assembly.MessageAssembler`, fed every chunk as the
turn made it — with its status.
Every write goes through the gateway's :class:`~chunkbridge.gateway.stores.writer.
StoreWriter`: the stream never waits for the database.
"""

from __future__ import annotations

import asyncio
from typing import Any

from chunkbridge.gateway.errors import BadRequest, ChatFull, StoreDown
from chunkbridge.gateway.stores.base import (
    Key,
    MessageStatus,
    Put,
    StoreUnavailable,
    TranscriptStore,
)
from chunkbridge.gateway.stores.transcript_sql import title_of
from chunkbridge.gateway.stores.writer import StoreWriter
from chunkbridge.gateway.turn.history import UnknownContinuation, conversation
from chunkbridge.protocol_specs.chat_request import ChatRequest, UIMessage
from chunkbridge.translators.core.closing import CloseReason
from chunkbridge.translators.core.message_assembly import MessageAssembler
from chunkbridge.translators.core.sse_codec import json_safe

__all__ = ["TurnTranscript", "stored_request"]

#: Seconds a turn's end waits for its answer to be written when the next request depends on it
#: (``history = stored``) before the client's stream ends anyway.
SETTLE_TIMEOUT = 5.0


def _dump(message: UIMessage) -> dict[str, Any]:
    return message.model_dump(mode="json", exclude_unset=True)


async def stored_request(
    store: TranscriptStore, request: ChatRequest, session_id: str, limit: int
) -> tuple[ChatRequest, dict[str, Any] | None]:
    """The request with the stored conversation as its messages, and the stored message it
    continues (answers applied), if it is a continuation. Refuses (before anything streams) a
    request without a chat id or message, a continuation of a message the chat does not hold,
    a full chat, and an unreachable store (503)."""
    if not request.id or not request.messages:
        raise BadRequest("history = stored needs the chat id and the last message.")
    try:
        transcript = await store.load((session_id, request.id))
    except StoreUnavailable as exc:
        raise StoreDown(detail=str(exc)) from exc
    last = _dump(request.messages[-1])
    try:
        messages = conversation([m.message for m in transcript.messages], last)
    except UnknownContinuation as exc:
        raise BadRequest(
            "The message to continue is not in this chat's stored history.", detail=str(exc)
        ) from exc
    if len(messages) > limit:
        raise ChatFull(detail=f"the chat holds {len(messages) - 1} messages, max {limit}")
    continued = messages[-1] if last.get("role") == "assistant" else None
    update: dict[str, Any] = {"messages": [UIMessage.model_validate(m) for m in messages]}
    if continued is None and any(
        m.message.get("id") == last.get("id") for m in transcript.messages
    ):
        update["messageId"] = last.get("id")  # a stored message sent again: the AI SDK's edit
    return request.model_copy(update=update), continued


class TurnTranscript:
    """One turn's record in the store (see the module)."""

    def __init__(
        self,
        writer: StoreWriter,
        key: Key,
        major: int,
        request: ChatRequest,
        message_id: str,
        continued: dict[str, Any] | None,
        wait_for_end: bool,
        assembler: MessageAssembler,
    ) -> None:
        self.writer = writer
        self.key = key
        self.major = major
        self.message_id = message_id
        #: The turn's message as the client builds it (read at the end).
        self.assembler = assembler
        self._request = request
        #: The message this turn continues: the stored one with its answers (``history =
        #: stored``), else the client's own copy — what the client's answer builds on.
        self._continued = continued
        self._wait_for_end = wait_for_end
        self._ended: asyncio.Future[bool] | None = None

    def begin(self) -> None:
        """Queue the turn's first writes: the user message, or the continued message with its
        answers (``streaming``: the turn adds to it). The answer waits for the turn's end: a
        chat loaded meanwhile shows the question, and ``resume`` the answer."""
        key, major = self.key, self.major
        if self._continued is not None:
            self.writer.submit(Put(key, self._continued, "streaming", major), "continued")
            return
        last = self._request.messages[-1] if self._request.messages else None
        if last is not None and last.role == "user":
            user = _dump(last)
            request = self._request  # sent again (regenerate, edit): what followed it goes
            again = request.trigger == "regenerate-message" or request.messageId == user["id"]
            put = Put(key, user, "done", major, title=title_of(user), truncate_after=again)
            self.writer.submit(put, "user")

    def end(self, close_reason: CloseReason | None) -> None:
        """The turn is over: queue the answer as the client has it."""
        if self._ended is not None:
            return
        assembler = self.assembler
        message = json_safe(assembler.message)  # (as the client read what orjson refused)
        if message is None:
            message = {"id": self.message_id, "role": "assistant", "parts": []}
        status: MessageStatus
        if assembler.error_text is not None:
            status = "error"
        elif close_reason is CloseReason.COMPLETED:
            status = "done"
        else:
            status = "aborted"
        put = Put(self.key, message, status, self.major)
        self._ended = self.writer.submit(put, f"answer ({status})")

    async def settled(self) -> None:
        """With ``history = stored``: wait (bounded) until the answer is written, so the next
        request — which the client may send the moment this stream ends — reads it."""
        if self._wait_for_end and self._ended is not None:
            await self.writer.settled(self._ended, SETTLE_TIMEOUT)
