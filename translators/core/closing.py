"""How a turn ends: one typed request, one table of what each reason tells the client.

Every ending goes through a :class:`CloseRequest`: a dialect that saw its upstream's terminal event
returns one from its handler, the turn pipeline makes one when the upstream goes away, the driver
makes one for a timeout, a disconnect or a shutdown, and the guard turns a stray ``finish`` or
``error`` chunk into one. The guard's ``close`` is the only place that writes the closing chunks,
so the close reason (why the turn ended, for logs and metrics) and the ``finishReason`` (what the
client is told) are kept apart and always both known.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

__all__ = ["CLOSE_OUTCOMES", "CloseReason", "CloseRequest", "DeferredClose", "Outcome"]


class CloseReason(Enum):
    """Why a turn ends; :data:`CLOSE_OUTCOMES` says what the client is told."""

    #: The upstream ended the turn normally.
    COMPLETED = "completed"
    #: The upstream reported an error.
    UPSTREAM_ERROR = "upstream-error"
    #: The upstream connection ended without a terminal event (a truncated turn).
    UPSTREAM_CLOSED = "upstream-closed"
    #: The upstream sent something that cannot be understood.
    UPSTREAM_PROTOCOL_ERROR = "upstream-protocol-error"
    #: The client went away or pressed Stop, or the upstream reports the turn as cancelled.
    ABORTED = "aborted"
    #: A first-event, idle or total timeout ran out.
    TIMEOUT = "timeout"
    #: The gateway is shutting down.
    SHUTDOWN = "shutdown"
    #: A bug on our side (an exception inside translation); the detail goes to the log only.
    INTERNAL_ERROR = "internal-error"


@dataclass(frozen=True, slots=True)
class CloseRequest:
    """End the turn. A dialect handler returns one as the last item of its list.

    ``error_text`` is shown to the user for error reasons (unless errors are masked);
    ``finish_reason`` overrides the reason's default for non-error reasons (a dialect maps its
    upstream's stop reason); ``message_metadata`` rides on ``finish`` (usage, the raw reason…).
    """

    reason: CloseReason
    error_text: str | None = None
    finish_reason: str | None = None
    message_metadata: Any = None


@dataclass(frozen=True, slots=True)
class DeferredClose:
    """End the turn with ``request`` unless the upstream goes on: the agent asked the user (a
    question, a tool approval) and may wait for the answer, or may keep talking.

    An agent that asks in passing and carries on must not lose what follows, so asking does not end
    the turn by itself. It ends when the agent shows that it waits: its terminal event or an
    explicit waiting status (the dialect returns a :class:`CloseRequest` then), its connection
    ending, or a settle window of silence after the ask (the driver's clock,
    :class:`~chunkbridge.translators.core.deadlines.Deadlines`). Any event with content cancels it;
    transient status parts do not (:meth:`chunkbridge.translators.core.turn.Turn.settle`), unless
    the dialect knows better: ``DeferredClose(None)`` withdraws a pending one (a status that says
    the agent is busy again).
    """

    request: CloseRequest | None


@dataclass(frozen=True, slots=True)
class Outcome:
    is_error: bool
    finish_reason: str
    #: ``errorText`` used when the request gives none (short, shown to the user as is).
    error_text: str
    #: ``errorText`` for tool calls left without an output.
    tool_text: str


CLOSE_OUTCOMES: dict[CloseReason, Outcome] = {
    CloseReason.COMPLETED: Outcome(False, "stop", "", "The tool call did not complete."),
    CloseReason.UPSTREAM_ERROR: Outcome(
        True, "error", "The agent reported an error.", "interrupted"
    ),
    CloseReason.UPSTREAM_CLOSED: Outcome(
        True, "error", "The agent stopped before finishing its answer.", "interrupted"
    ),
    CloseReason.UPSTREAM_PROTOCOL_ERROR: Outcome(
        True, "error", "The agent sent a message that could not be understood.", "interrupted"
    ),
    # ai 7 marks an interrupted message (no automatic follow-up); the gate maps it to "other"
    # below 7.
    CloseReason.ABORTED: Outcome(False, "interrupted", "", "interrupted"),
    CloseReason.TIMEOUT: Outcome(
        True, "error", "The agent did not respond in time.", "interrupted"
    ),
    CloseReason.SHUTDOWN: Outcome(
        True, "error", "The server is restarting; please try again.", "interrupted"
    ),
    CloseReason.INTERNAL_ERROR: Outcome(
        True, "error", "An internal error occurred.", "interrupted"
    ),
}
