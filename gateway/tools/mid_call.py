"""A call that asks the user in its middle: MCP before 2026-07-28 (``elicitation/create``, form
mode, sent while the server handles ``tools/call``), as most servers in use speak it.

The question cannot be answered within the turn (the app answers it in the next request), and the
call cannot be made again with the answer (the server is waiting inside it). So the call is
parked: its caller gets the question (:class:`~chunkbridge.gateway.tools.catalog.ToolQuestion`,
its key naming the parked call) as if the call had ended with it — the turn ends at the question
as for a 2026-07-28 server — while the server's request waits, up to ``elicitation_timeout``
(then it is declined, and the server goes on with that). The continuation's call with the answer
delivers it to the waiting request and waits for the call's result (or its next question).

A URL-mode request (the user is to open a page — a sign-in, a payment) asks the same way: the
question shows the URL, its form one choice — ``opened`` or ``declined`` — and the server gets
``accept`` or ``decline`` (what happens on the page is between the user and the server).

Which call asked: the protocol links the request to no call, so the question is the call's that
runs alone on the server; with several running, it is refused (the server reports it), said in
a log line. The parked call lives in this process; with ``resume = redis`` it is held in the
shared store while it waits, and an answer another instance takes is handed over to it here
(:mod:`~chunkbridge.gateway.tools.relayed`).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from chunkbridge.gateway.logging import get_logger
from chunkbridge.gateway.tools.catalog import ToolAnswer, ToolQuestion
from chunkbridge.gateway.tools.relayed import Relay

__all__ = ["KEY_PREFIX", "URL_CHOICE", "AskingCalls", "elicit_result"]

#: What the key of a parked call's question starts with (a 2026-07-28 server names its own).
KEY_PREFIX = "mid-call-"
#: The form of a URL-mode question.
URL_CHOICE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "choice": {
            "type": "string",
            "enum": ["opened", "declined"],
            "description": "opened: you opened the page and did what it asks",
        }
    },
    "required": ["choice"],
}


@dataclass(slots=True)
class _Question:
    key: str
    message: str
    schema: dict[str, Any]
    #: The user's answer: an ``ElicitResult`` for the waiting server.
    answer: asyncio.Future[Any]
    #: A URL-mode question (its answer carries no content).
    url: bool = False


@dataclass(slots=True)
class _Call:
    #: The SDK's ``tools/call``.
    task: asyncio.Task[Any]
    #: Set by the server's question.
    asked: asyncio.Future[_Question] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class AskingCalls:
    """One server's running calls, and those parked on a question (see the module)."""

    def __init__(self, server: str, timeout: float) -> None:
        self.server = server
        #: ``elicitation_timeout``: seconds a parked call waits for the user.
        self.timeout = timeout
        self._running: list[_Call] = []
        self._parked: dict[str, _Call] = {}
        #: Where a parked call is held for the other instances (``resume = redis``), if any.
        self.relay: Relay | None = None
        self.log = get_logger("chunkbridge.tools")

    def parked(self, answer: ToolAnswer | None) -> bool:
        """Whether ``answer`` is to a question of a parked call of this process's."""
        return answer is not None and answer.key in self._parked

    async def call(
        self, run: Coroutine[Any, Any, Any], answer: ToolAnswer | None, limit: float
    ) -> Any:
        """``run`` (the SDK's call) to its result — or, with ``answer``, the parked call it
        answers — unless it asks first: then its :class:`ToolQuestion`. Bounded by ``limit``
        seconds (``TimeoutError``; the call is cancelled then, or when the caller is)."""
        if answer is not None and answer.key in self._parked:
            run.close()  # (not run: the parked call goes on instead)
            call = self._unpark(answer.key)
            question = call.asked.result()
            call.asked = asyncio.get_running_loop().create_future()
            question.answer.set_result(elicit_result(answer, question.url))
        else:
            call = _Call(asyncio.create_task(run))
        self._running.append(call)
        try:
            async with asyncio.timeout(limit):
                await asyncio.wait({call.task, call.asked}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            call.task.cancel()
            raise
        finally:
            self._running.remove(call)
        if call.task.done():
            return call.task.result()
        question = call.asked.result()
        self._parked[question.key] = call
        if self.relay is not None:  # held before the question is out
            await self.relay.hold(question.key, self.timeout)
        call.task.add_done_callback(_retrieved)  # (a declined question's end goes unread)
        return ToolQuestion(question.key, question.message, question.schema, None)

    def _unpark(self, key: str) -> _Call:
        if self.relay is not None:
            self.relay.drop(key)
        return self._parked.pop(key)

    async def elicit(self, params: Any) -> Any:
        """The server asks (the SDK's ``elicitation_callback``): the user's answer, when it
        comes (see the module), or an ``ErrorData``."""
        from mcp.types import INVALID_REQUEST, ElicitRequestURLParams, ElicitResult, ErrorData

        waiting = [call for call in self._running if not call.asked.done()]
        if len(waiting) != 1:
            why = f"{len(waiting)} calls running: which one asks is unknown"
            self.log.warning("tools.elicitation_refused", server=self.server, reason=why)
            return ErrorData(code=INVALID_REQUEST, message=f"cannot ask the user: {why}")
        key = KEY_PREFIX + uuid.uuid4().hex
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if isinstance(params, ElicitRequestURLParams):
            message = f"{params.message}\nOpen {params.url}"
            question = _Question(key, message, URL_CHOICE, answer, url=True)
        else:
            question = _Question(key, params.message, dict(params.requested_schema), answer)
        waiting[0].asked.set_result(question)
        try:
            return await asyncio.wait_for(answer, self.timeout)
        except TimeoutError:
            if key in self._parked:
                self._unpark(key)
            self.log.info("tools.elicitation_timed_out", server=self.server, seconds=self.timeout)
            return ElicitResult(action="decline")


def elicit_result(answer: ToolAnswer, url: bool = False) -> Any:
    """The user's answer as the server's ``ElicitResult`` (a URL-mode question's choice is
    its action)."""
    from mcp.types import ElicitResult

    if not url:
        return ElicitResult.model_validate({"action": answer.action, "content": answer.content})
    opened = answer.action == "accept" and (answer.content or {}).get("choice") == "opened"
    return ElicitResult(action="accept" if opened else "decline")


def _retrieved(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()
