"""A gateway tool asks the user: MCP elicitation as chunkbridge's question form, stated once.

An MCP server may need the user's input in the middle of a call (MCP 2026-07-28: the call's
result is an ``InputRequiredResult`` holding ``elicitation/create`` requests and an opaque
``requestState``; the client asks, then calls again with the answers and the state). The gateway
turns a form elicitation into the question every ``useChat`` already answers:

=====================  ==========================================================================
the tool's part         a preliminary output ``{"question": message}``: the call waits; its
                        result replaces it in the continuation
the question            a client-side :data:`QUESTION_TOOL` call (id ``<tool call id>-ask-<hex>``)
                        at ``input-available``, in a step of its own after the step's results —
                        so ``sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithToolCalls``
                        sends once it is answered. Its input: ``question`` (the server's
                        message), ``schema`` (the requested JSON Schema: flat, primitive
                        properties), ``options`` (the values of a lone enum property) and
                        ``elicitation`` (what the gateway needs to call again — the call, the
                        request's key, the server's state — signed: :func:`elicitation_signature`)
the answer              ``addToolOutput``: an object of the schema's properties, or a lone
                        value for a schema of one property; an ``output-error`` declines
                        (:func:`elicitation_response`)
=====================  ==========================================================================

The turn ends there (``agentLoop.ending``: ``app-tools``). The continuation calls the tool again
with the answer and the state, writes its result on the tool's part and calls the model, which
never sees the question: it is the tool's, not the model's.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any, Final

from chunkbridge.protocol_specs.human_in_the_loop import QUESTION_TOOL, canonical_json

__all__ = [
    "ASK_SUFFIX",
    "elicitation_question",
    "elicitation_response",
    "elicitation_signature",
    "is_elicitation_question",
]

#: The question's call id is the tool call's with this suffix (and a random one of its own).
ASK_SUFFIX: Final = "-ask-"

_YES: Final = frozenset({"yes", "y", "true", "on", "1"})
_NO: Final = frozenset({"no", "n", "false", "off", "0"})


def elicitation_question(
    message: str, schema: dict[str, Any], elicitation: dict[str, Any]
) -> dict[str, Any]:
    """The input of the :data:`QUESTION_TOOL` call that asks ``message`` (``elicitation``:
    ``toolCallId``, ``toolName``, ``arguments``, ``key``, ``requestState``, ``signature``)."""
    question: dict[str, Any] = {"question": message, "schema": schema}
    properties = schema.get("properties")
    if isinstance(properties, dict) and len(properties) == 1:
        (only,) = properties.values()
        if isinstance(only, dict) and isinstance(only.get("enum"), list):
            question["options"] = only["enum"]
    question["elicitation"] = elicitation
    return question


def is_elicitation_question(tool_name: str, tool_input: Any) -> bool:
    """Whether a call is a gateway tool's question (not the model's nor the agent's)."""
    return (
        tool_name == QUESTION_TOOL
        and isinstance(tool_input, dict)
        and isinstance(tool_input.get("elicitation"), dict)
    )


def elicitation_signature(secret: str, question_id: str, question: dict[str, Any]) -> str:
    """HMAC-SHA256 (hex) over the question id and everything the gateway acts on: the call, its
    tool and arguments, the request's key, the server's state and the schema. An answer whose
    question was altered does not verify."""
    elicitation = question.get("elicitation") or {}
    signed = [
        "chunkbridge-elicitation-v1",
        question_id,
        *(elicitation.get(k) for k in ("toolCallId", "toolName", "arguments", "key")),
        elicitation.get("requestState"),
        question.get("schema"),
    ]
    payload = canonical_json(signed)  # as the client will write it back
    return hmac.new(secret.encode(), payload.encode(), hashlib.sha256).hexdigest()


def elicitation_response(
    output: Any, is_error: bool, schema: dict[str, Any]
) -> tuple[str, dict[str, Any] | None]:
    """MCP's ``ElicitResult`` (``action``, ``content``) for the app's answer: an error output
    declines; an object is the content; a lone value fills a schema's only property (a number
    or yes/no read as its type asks). Anything else declines."""
    if is_error:
        return "decline", None
    if isinstance(output, dict):
        return "accept", output
    properties = schema.get("properties")
    if isinstance(properties, dict) and len(properties) == 1 and output is not None:
        ((name, spec),) = properties.items()
        kind = spec.get("type") if isinstance(spec, dict) else None
        return "accept", {name: _as(kind, output)}
    return "decline", None


def _as(kind: Any, value: Any) -> Any:
    """``value`` as the JSON Schema type ``kind`` asks, when it reads as one; else as given."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    try:
        if kind == "integer":
            return int(text)
        if kind == "number":
            return float(text)
    except ValueError:
        return value
    if kind == "boolean" and text.lower() in _YES | _NO:
        return text.lower() in _YES
    return value
