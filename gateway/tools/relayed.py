"""An answer to a parked call that reaches another instance of the gateway (``resume = redis``).

A call parked on a question (:mod:`~chunkbridge.gateway.tools.mid_call`) waits inside one
process: the server's ``elicitation/create`` is a request on that process's connection. The
continuation that carries the user's answer may reach any instance. So the instance that parks a
call says so in the shared store (:meth:`Relay.hold`, for as long as the call may wait), and the
instance the answer reaches hands it over (:meth:`Relay.ask`): the holder delivers it to the
waiting call as if it had come in itself and sends back the call's progress reports and then its
outcome — its result, its error, or the next question it asks — which the asker's turn uses as
its own call's. Nobody holding the key (the question timed out, was answered, or its instance is
gone) is the same error result as a key this process does not know.

What a relay carries is JSON: the answer one way, progress and the outcome the other.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

from chunkbridge.gateway.logging import get_logger
from chunkbridge.gateway.tool_settings import ToolServerSettings
from chunkbridge.gateway.tools.catalog import Progress, ToolAnswer, ToolOutcome, ToolQuestion

__all__ = [
    "RELAY_MARGIN",
    "Relay",
    "RelayHandler",
    "answer_elsewhere",
    "forward",
    "outcome_from",
    "request_for",
    "served",
]

#: Seconds an answer handed to another instance waits past ``tool_timeout`` for the outcome
#: (the call runs there under ``tool_timeout``; this covers the store's round trips).
RELAY_MARGIN = 5.0
_log = get_logger("chunkbridge.tools")

#: The holder's side: a relayed request (and where to send progress) → the final reply.
Send = Callable[[dict[str, Any]], None]
RelayHandler = Callable[[dict[str, Any], Send], Awaitable[dict[str, Any]]]


class Relay(Protocol):
    """Requests by key to the one instance that holds the key (see the module)."""

    async def hold(self, key: str, seconds: float) -> None:
        """This instance holds ``key`` for ``seconds`` at most (a failure is logged: an answer
        elsewhere then finds no holder)."""

    def drop(self, key: str) -> None:
        """This instance no longer holds ``key`` (the write runs on its own)."""

    def ask(
        self, key: str, request: dict[str, Any], limit: float
    ) -> Awaitable[AsyncIterator[dict[str, Any]] | None]:
        """``request`` to the holder of ``key``: its replies (the last one final), read for up
        to ``limit`` seconds (then ``TimeoutError``); ``None`` when nobody holds it."""

    def serve(self, handler: RelayHandler) -> None:
        """Requests that reach this instance go to ``handler``."""


def request_for(server: str, tool: str, answer: ToolAnswer) -> dict[str, Any]:
    """What the holder needs to go on with the call: its server, its tool, the answer."""
    return {
        "server": server,
        "tool": tool,
        "answer": {
            "key": answer.key,
            "action": answer.action,
            "content": answer.content,
            "state": answer.state,
        },
    }


def answer_of(request: dict[str, Any]) -> ToolAnswer:
    fields = request["answer"]
    return ToolAnswer(fields["key"], fields["action"], fields["content"], fields["state"])


def reply_of(outcome: ToolOutcome) -> dict[str, Any]:
    """The final reply: ``outcome`` as JSON."""
    asks = outcome.asks
    question = (
        None
        if asks is None
        else {"key": asks.key, "message": asks.message, "schema": asks.schema, "state": asks.state}
    )
    return {"outcome": {"output": outcome.output, "error": outcome.error, "asks": question}}


def outcome_from(reply: dict[str, Any]) -> ToolOutcome:
    fields = reply["outcome"]
    asks = fields.get("asks")
    question = (
        None
        if asks is None
        else ToolQuestion(asks["key"], asks["message"], asks["schema"], asks["state"])
    )
    return ToolOutcome(output=fields.get("output"), error=fields.get("error"), asks=question)


async def forward(
    relay: Relay,
    request: dict[str, Any],
    progress: Progress | None,
    limit: float,
) -> ToolOutcome | None:
    """``request`` (see :func:`request_for`) to the instance holding its answer's call: the
    call's outcome, its progress reports told to ``progress`` meanwhile; ``None`` when no
    instance holds the call. Waits ``limit`` seconds at most (then ``TimeoutError``)."""
    replies = await relay.ask(request["answer"]["key"], request, limit)
    if replies is None:
        return None
    async for reply in replies:
        if "outcome" in reply:
            return outcome_from(reply)
        if progress is not None:
            progress(reply["progress"])
    raise TimeoutError("the instance holding the call sent no outcome")


async def served(
    call: Callable[[str, str, Progress, ToolAnswer], Awaitable[ToolOutcome]],
    request: dict[str, Any],
    send: Send,
) -> dict[str, Any]:
    """The holder's side: ``call(server, tool, progress, answer)`` runs the parked call on with
    the answer; each progress report is sent as it comes, the outcome is the final reply."""
    outcome = await call(
        request["server"],
        request["tool"],
        lambda report: send({"progress": report}),
        answer_of(request),
    )
    return reply_of(outcome)


async def answer_elsewhere(
    relay: Relay | None,
    server: str,
    settings: ToolServerSettings,
    tool: str,
    answer: ToolAnswer,
    progress: Progress | None,
) -> ToolOutcome:
    """An answer to a parked call that this process does not hold: handed over to the
    instance that does, if one does — or the error result saying the call no longer waits."""
    outcome: ToolOutcome | None = None
    if relay is not None:
        request = request_for(server, tool, answer)
        try:
            outcome = await forward(relay, request, progress, settings.tool_timeout + RELAY_MARGIN)
        except TimeoutError:
            return ToolOutcome(error=f"{tool} took longer than {settings.tool_timeout:g} s")
        except Exception as exc:  # the store's failure: for the model, and said
            why = f"{type(exc).__name__}: {exc}"
            _log.warning("tools.relay_failed", server=server, error=why)
            return ToolOutcome(
                error=f"{tool} failed: its answer could not reach the instance of the gateway "
                f"running the call ({why})"
            )
    if outcome is None:
        return ToolOutcome(
            error=f"{tool} no longer waits for this answer (its question timed out or was "
            "answered, or the instance of the gateway running the call is gone)"
        )
    _log.info("tools.answer_relayed", server=server, tool=tool)
    return outcome
