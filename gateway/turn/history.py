"""The conversation a turn sends upstream with ``history = stored``: the server's copy, not the
client's (no I/O here: the decisions only, on plain ``UIMessage`` JSON).

The client sends its last message. A user message is taken as sent — new, or an edit or a
regenerate of a stored one, which drops what followed it. An assistant message (a
continuation: the app answered a tool call, an approval, a question) is the *stored* message
with the client's answers applied, and nothing else of the client's copy: a client cannot put
words in the assistant's mouth or change a call's input. The answers are then checked as any
request's are (approvals against the ledger, questions against what was issued).
"""

from __future__ import annotations

import copy
from typing import Any

from chunkbridge.translators.core.message_tools import is_tool

__all__ = ["AWAITING_STATES", "conversation", "shown", "with_answer_copy", "with_answers"]

#: Tool part states that wait for the app's answer.
AWAITING_STATES = frozenset({"input-available", "approval-requested"})
_OUTPUTS = frozenset({"output-available", "output-error"})


class UnknownContinuation(ValueError):
    """The client continues an assistant message the chat does not hold."""


def shown(message: dict[str, Any]) -> bool:
    """Whether a stored message is part of the conversation: an assistant message whose turn
    has produced nothing yet is not (its turn runs; a resumed stream will fill it)."""
    return bool(message.get("parts")) or message.get("role") != "assistant"


def with_answers(server: dict[str, Any], client: dict[str, Any]) -> dict[str, Any]:
    """``server`` (the stored message) with the answers ``client`` gave to the calls that
    wait for one: an output or error for a call with its input, a decision for an approval
    request with the same approval id. Everything else is the server's."""
    answers = {p.get("toolCallId"): p for p in client.get("parts", []) if is_tool(p)}
    merged = copy.deepcopy(server)
    for part in merged.get("parts", []):
        if not is_tool(part) or part.get("state") not in AWAITING_STATES:
            continue
        answer = answers.get(part.get("toolCallId"))
        if answer is None:
            continue
        state = answer.get("state")
        if part["state"] == "input-available" and state in _OUTPUTS:
            part["state"] = state
            for key in ("output", "errorText"):
                if key in answer:
                    part[key] = answer[key]
        elif part["state"] == "approval-requested" and state == "approval-responded":
            asked, decided = part.get("approval") or {}, answer.get("approval") or {}
            if decided.get("id") != asked.get("id"):
                continue
            part["state"] = state
            part["approval"] = {**asked, "approved": decided.get("approved")}
            if decided.get("reason") is not None:
                part["approval"]["reason"] = decided["reason"]
    return merged


def conversation(stored: list[dict[str, Any]], last: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages of the turn: the stored ones up to the client's ``last`` message, then
    ``last`` (see the module). :class:`UnknownContinuation` when ``last`` continues an
    assistant message the chat does not hold."""
    history = [m for m in stored if shown(m)]
    position = next((i for i, m in enumerate(history) if m.get("id") == last.get("id")), None)
    if last.get("role") == "assistant":
        if position is None:
            raise UnknownContinuation(str(last.get("id")))
        return [*history[:position], with_answers(history[position], last)]
    if position is None:
        return [*history, last]
    return [*history[:position], last]


def with_answer_copy(
    messages: list[dict[str, Any]], answer: dict[str, Any], user_id: str
) -> list[dict[str, Any]]:
    """The client's ``messages`` with the server's copy of an ``answer`` that ended while the
    client's newest message waited (``busy``): in place of the client's copy — cut where it
    was when the user sent — or, where the client has none, after the user message it answers
    (``user_id``), else just before the newest message."""
    answer_id = answer.get("id")
    for index, message in enumerate(messages):
        if message.get("id") == answer_id:
            return [*messages[:index], answer, *messages[index + 1 :]]
    at = next((i + 1 for i, m in enumerate(messages[:-1]) if m.get("id") == user_id), None)
    if at is None:
        at = max(len(messages) - 1, 0)
    return [*messages[:at], answer, *messages[at:]]
