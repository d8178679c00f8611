"""pi agent events (dialect ``pi-agent``): what pi's agent core streams for one prompt.

Source: the published type definitions of ``@mariozechner/pi-agent-core`` 0.73 /
``@earendil-works/pi-agent-core`` 1.5 (``dist/types.d.ts``: ``AgentEvent``; ``pi-ai``'s
``AssistantMessageEvent``; the coding agent's RPC mode, ``dist/modes/rpc/rpc-types.d.ts``), read
against a running ``Agent`` with pi-ai's faux provider (``shared/specs/ecosystem-notes.md`` §3). A
server forwards what ``agent.subscribe`` delivers, one event per WebSocket frame, SSE ``data:``, or
line of a newline-delimited JSON body (``Content-Type: application/x-ndjson``); the in-process
events carry the whole ``partial`` message on every update, the proxy form
(``ProxyAssistantMessageEvent``) strips it and adds ``id``/``toolName`` to ``toolcall_start``: both
are read. One prompt is one run: ``agent_start`` … ``agent_end``.

Mapping (translator: ``translators/dialects/pi_agent/``), decisions and reasons:

==================================  ==============================================================
upstream                            UI chunks
==================================  ==============================================================
``agent_start``                     ``start``
``turn_start`` / ``turn_end``       ``start-step`` / ``finish-step`` (one model call and the tool
                                    runs after it)
``message_start`` / ``_end``        an assistant message's blocks are addressed by
                                    ``contentIndex`` (reset per message); user and tool-result
                                    messages are the agent's bookkeeping: nothing
``message_update`` text_* /         a text / reasoning part per block; ``thinkingSignature`` (and
thinking_*                          ``redacted``) ride in ``providerMetadata {pi: …}`` at the end
``message_update`` toolcall_*       ``tool-input-start`` (id and name from the event or the
                                    partial message) / ``-delta`` / ``-available`` with the
                                    final ``toolCall.arguments``
``message_update`` error / done     forwarding servers may send them: ``error`` ends the turn
``message_end``                     ``stopReason`` and ``usage`` kept; ``stopReason: "error"``
                                    ends the turn with ``errorMessage``; a message whose blocks
                                    never streamed (no updates) is sent whole here
``tool_execution_start``            the agent runs that call: its part gets the input if it was
                                    not streamed (``tool-input-available``)
``tool_execution_update``           ``tool-output-available`` with ``preliminary: true``
``tool_execution_end``              ``tool-output-available`` (``providerExecuted``; the
                                    result's ``content`` and ``details``) or
                                    ``tool-output-error`` with the result's text
``agent_end``                       ``finish`` with the last stop reason
                                    (:data:`STOP_REASONS`) and ``messageMetadata {usage}``
                                    summed over the run's messages; ``willRetry: true`` (the
                                    coding agent retries): the turn goes on
RPC ``response``                    a failed command (``success: false``) ends the turn with its
                                    ``error``; an accepted one says nothing
RPC ``extension_ui_request``        an extension asks the user (pi's human in the loop):
                                    ``confirm`` while a tool call is open (announced, not ended)
                                    is that call's approval (``tool-approval-request``,
                                    ``approvalId`` = the request id, ``reason`` = title: message;
                                    ai 5: the question form); ``select``/``input``/``editor`` and
                                    a ``confirm`` with no open call are ``ask_user`` questions
                                    (``toolCallId`` = the request id, input = the request's
                                    fields plus ``question``; ``options: ["yes", "no"]`` for a
                                    confirm); the turn ends ``tool-calls``, the agent waiting.
                                    Other methods (``notify``, ``setStatus``, ``setWidget``…)
                                    need no answer: transient ``data-pi-ui``
session events (``queue_update``,   the unknown-event policy (transient ``data-<type>``)
``compaction_*``, ``auto_retry_*``)
==================================  ==============================================================

Frames sent: ``{"type": "prompt", "id": <run id>, "message": <text>, "images"?: [...]}`` and, to
stop, ``{"type": "abort"}`` (the RPC commands; both replaceable by frame templates). pi keeps the
conversation itself: only the newest user message goes upstream. A continuation that answers
dialogs sends only :func:`ui_response` frames (``{"type": "extension_ui_response", "id", "value"
| "confirmed" | "cancelled"}``; an approval is ``confirmed``, a declined question ``cancelled``).
The agent is still inside its run while it waits, so the server behind the WebSocket must keep the
session across sockets (the gateway closes the turn's socket without the abort frame and opens a
new one whose first frame is the answer) and send the rest of the run there. Over HTTP the
dialogs are shown, but an answer has no way back.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = [
    "STOP_REASONS",
    "UI_DIALOGS",
    "USAGE_FIELDS",
    "prompt_images",
    "ui_response",
]

#: ``extension_ui_request`` methods that wait for an ``extension_ui_response``.
UI_DIALOGS: Final = frozenset({"select", "confirm", "input", "editor"})


def ui_response(request_id: str, **answer: Any) -> dict[str, Any]:
    """The RPC answer to a dialog: ``value=…``, ``confirmed=…`` or ``cancelled=True``."""
    return {"type": "extension_ui_response", "id": request_id, **answer}


#: pi-ai ``stopReason`` → finishReason.
STOP_REASONS: Final[dict[str, str]] = {
    "stop": "stop",
    "length": "length",
    "toolUse": "tool-calls",
    "error": "error",
    "aborted": "other",
    "pending": "other",
    "deferred": "other",
}

#: pi-ai ``usage`` → ``finish.messageMetadata.usage`` (summed over the run's messages).
USAGE_FIELDS: Final[dict[str, tuple[str, ...]]] = {
    "inputTokens": ("input",),
    "outputTokens": ("output",),
    "cacheReadTokens": ("cacheRead",),
    "cacheWriteTokens": ("cacheWrite",),
    "reasoningTokens": ("reasoning",),
    "totalTokens": ("totalTokens",),
}


def prompt_images(files: list[Any]) -> list[dict[str, Any]]:
    """The prompt's image files as pi ``ImageContent`` (``{type, data, mimeType}``, base64):
    pi takes images inline only."""
    images = []
    for file in files:
        url: str = file.url
        if file.mediaType.startswith("image/") and url.startswith("data:") and ";base64," in url:
            header, _, data = url[5:].partition(",")
            images.append({"type": "image", "data": data, "mimeType": header.split(";")[0]})
    return images
