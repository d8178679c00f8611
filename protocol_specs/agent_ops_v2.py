"""agent-ops V2 (dialect ``agent-ops-v2``): the per-session backend's WebSocket events.

Source: ``shared/specs/seed-protocols.md`` §1 and "What real deployments send". One WebSocket
per session; the gateway sends :func:`prompt_frame`, reads events, and sends :data:`ABORT_FRAME`
when the client goes away. The backend keeps the history, so only the latest user message is sent.

Mapping (translator: ``translators/dialects/agent_ops_v2/``), decisions and reasons:

============================  =====================================================================
upstream event                UI chunks
============================  =====================================================================
``message.create``            ``start`` (once; ``messageMetadata.turnId``); a later turn in the
                              same stream opens a new step (``start-step``) instead of a second
                              message; a repeat for the current ``turnId`` is bookkeeping (no new
                              step: it would split the text part)
``message.part.text-delta``   ``text-start`` (first) / ``text-delta``
``chunk`` (legacy)            same as a text delta (``content``)
``message.part.tool-update``  the open text part ends, then per ``status``: ``pending`` →
                              ``tool-input-start`` (repeats and empty ``args`` ignored);
                              ``running`` → ``tool-input-available`` (``args``, ``{}`` if none);
                              ``completed`` → ``tool-output-available`` (``result``); ``error`` →
                              ``tool-output-error`` (``error``). Missing earlier states are filled
                              in. Every tool chunk has ``providerExecuted: true``: the backend runs
                              the tools, the client must never wait to run them. A repeated update
                              that changes nothing (a second ``pending``, an update after the
                              output) produces nothing and leaves the text part open.
                              ``awaiting_approval`` (the backend asks before it runs the tool;
                              optional ``approvalId``, default the ``callId``, and ``reason``) →
                              the input, then ``tool-approval-request`` (ai 5: its question
                              form, ``protocol_specs/human_in_the_loop.py``); the turn ends
                              with ``tool-calls`` without the abort frame once the agent waits
                              (as after a ``question``). The decision goes back as
                              :func:`approval_frame`; approved, the backend's later updates
                              for the call stream into the same part; denied, the
                              continuation starts with ``tool-output-denied``.
``message.finalize``          parts closed; ``end_turn`` → ``finish`` (stop); ``canceled`` →
                              ``finish`` (interrupted; ``other`` below ai 7), no error; ``error`` →
                              ``error`` (the upstream's text), ``finish`` (error). ``finalText`` is
                              never appended to streamed text: it is sent only when no text was
                              streamed since the last tool and it is not already the end of what
                              was streamed (it may hold the whole text or only the text after the
                              last tool).
``complete``                  ends the turn (``finish``) if ``message.finalize`` did not
``agentStatus``               transient ``data-agent-status`` ``{status, detail?}``; ``idle`` once a
                              turn has started also ends it (``finish``, stop): the session socket
                              stays open, and a runner may go idle without ``message.finalize`` or
                              ``complete``. After a question or an approval request, ``waiting``
                              (``awaiting_input``, ``idle``) ends the turn at once (``tool-calls``);
                              ``thinking``/``streaming``/``tool_calling`` say the agent went on
``error``                     ``error`` (``{messageId, error: "<text>"}`` from the runner, or
                              ``{message}``), then ``finish`` (error)
``question``                  the agent asks: a client-side tool call ``ask_user``
                              (``tool-ask_user``; ``toolCallId`` = the question id, input = the
                              event's fields: question, options…) ending at ``input-available``,
                              shown at once. The turn ends with ``tool-calls`` when the agent
                              waits — a waiting status, its socket closing, or silence for
                              ``question_settle`` (0.5 s) — and the socket is closed without the
                              abort frame (the agent keeps waiting). An agent that asks in
                              passing and goes on (text, tools) streams into the same message
                              and ends the turn itself (finish ``tool-calls``: the question is
                              still answerable). Status events alone do not end the wait. The
                              app answers with ``addToolOutput``; the
                              next request, continuing the same message, sends
                              :func:`answer_frame` instead of a prompt, and the agent's
                              continuation streams into that message
``status``                    transient ``data-session-status``
``init``, ``message``,        deliberately not mapped: hydration of the browser socket, never
``message.updated``           re-rendered as new text (counted as ``hydration``)
domain events (git, diffs,    not chat events: forwarded as transient ``data-<type>`` parts by the
reviews, users, toasts, …)    unknown-event policy (``forward``) so a UI can still use them
============================  =====================================================================

What a continuation sends: only the answers (one :func:`answer_frame` per answered question, one
:func:`approval_frame` per decision; each templatable: ``answer_frame``, ``approval_frame``), never
the prompt again: the backend keeps the conversation. With ``history = "full"`` the first frame
also carries ``messages``.

Only the default channel is exposed (``channelType``/``channelId`` are kept in the start metadata).
"""

from __future__ import annotations

from typing import Any, Final

__all__ = [
    "ABORT_FRAME",
    "APPROVAL_STATUS",
    "BUSY_STATUSES",
    "WAITING_STATUSES",
    "answer_frame",
    "approval_frame",
    "FINALIZE_REASONS",
    "HYDRATION_EVENTS",
    "prompt_frame",
]


#: ``message.finalize.reason`` → UI finishReason (None: the turn failed, see the mapping table).
FINALIZE_REASONS: Final[dict[str, str | None]] = {
    "end_turn": "stop",
    "stop": "stop",
    "max_tokens": "length",
    "length": "length",
    "tool_use": "tool-calls",
    "canceled": "interrupted",
    "cancelled": "interrupted",
    "aborted": "interrupted",
    "error": None,
}

HYDRATION_EVENTS: Final = frozenset({"init", "message", "message.updated"})

ABORT_FRAME: Final[dict[str, Any]] = {"type": "abort"}
#: The tool-update status of a call waiting for the user's approval.
APPROVAL_STATUS: Final = "awaiting_approval"
#: ``agentStatus`` values after a question or an approval request: the agent waits for the
#: answer (the turn ends now), or it is busy again (it went on; the turn ends at its own end).
WAITING_STATUSES: Final = frozenset({"waiting", "awaiting_input", "idle"})
BUSY_STATUSES: Final = frozenset({"thinking", "streaming", "tool_calling"})


def answer_frame(question_id: str, answer: Any, is_error: bool = False) -> dict[str, Any]:
    """The frame that answers a question (the default; a deployment may template it): the app's
    tool output, or its error text with ``"error": true`` when the user declined."""
    frame: dict[str, Any] = {"type": "answer", "questionId": question_id, "answer": answer}
    if is_error:
        frame["error"] = True
    return frame


def approval_frame(
    approval_id: str, call_id: str, approved: bool, reason: str | None
) -> dict[str, Any]:
    """The frame that answers an approval request (the default; a deployment may template it)."""
    frame: dict[str, Any] = {
        "type": "approval",
        "approvalId": approval_id,
        "callId": call_id,
        "approved": approved,
    }
    if reason is not None:
        frame["reason"] = reason
    return frame


def prompt_frame(text: str, message_id: str, attachments: list[dict[str, Any]]) -> dict[str, Any]:
    """The frame that starts a turn: the latest user text and its file parts."""
    return {"type": "prompt", "content": text, "messageId": message_id, "attachments": attachments}
