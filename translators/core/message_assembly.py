"""The assistant ``UIMessage`` a client builds from a UI message stream, built on the server.

What the gateway stores of a turn must be what the browser shows: the same parts in the same
order, the same states, tool outputs and approvals, data parts replaced in place by id and
transient ones left out, metadata merged, a continuation added to the message it continues.
:class:`MessageAssembler` follows the client's own reading of the stream
(``processUIMessageStream`` under ``readUIMessageStream``) for the major it is told, down to the
rules that differ between 5, 6 and 7, and the final message is the client's last *written*
state (``start-step`` alone writes nothing). The reference is the real client: the differential
test runs every golden through ai 5, 6 and 7 and compares.

Like the client, it stops at the first ``error`` chunk or at a chunk it cannot apply (a delta
for a part never started): the message is then what it was before. Values the client leaves
``undefined`` are absent keys here (they vanish from its JSON as well).

It is fed chunks as a turn makes them (:meth:`feed_written`, :meth:`text_delta`: the one
assembler of a turn, :class:`~chunkbridge.translators.core.turn.Turn`'s), decoded chunks
(:meth:`feed`) or SSE bodies (:meth:`feed_sse`);
text and tool-input deltas are only appended, and joined (a partial tool input parsed) when the
message is read or another chunk needs them, so a long answer costs linear time.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from chunkbridge.translators.core.message_tools import PartialCall, ToolChunks, given, is_tool, put
from chunkbridge.translators.core.partial_json import MISSING, parse_partial_json
from chunkbridge.translators.core.sse_codec import as_written

__all__ = ["MessageAssembler", "merge_metadata"]

_DATA_PREFIX = b"data: "
_DONE_LINE = b"data: [DONE]"
#: What a chunk the client could not apply raises here (the client throws and stops too).
_CANNOT_APPLY = (KeyError, TypeError, AttributeError, IndexError, StopIteration)


class _Text:
    """An open text or reasoning part and the deltas not yet joined into it."""

    __slots__ = ("part", "pieces")

    def __init__(self, part: dict[str, Any]) -> None:
        self.part = part
        self.pieces: list[str] = []


def merge_metadata(base: Any, overrides: Any) -> Any:
    """The client's ``mergeObjects``: objects merged key by key, anything else replaced."""
    if not isinstance(base, dict) or not isinstance(overrides, dict):
        return overrides
    result = dict(base)
    for key, value in overrides.items():
        old = result.get(key)
        result[key] = merge_metadata(old, value) if isinstance(old, dict) else value
    return result


class MessageAssembler(ToolChunks):
    """One assistant message as the client of ``major`` builds it (see the module)."""

    def __init__(self, major: int, continued: dict[str, Any] | None = None) -> None:
        self.major = major
        #: The ``finishReason`` of the last ``finish`` chunk, if any.
        self.finish_reason: str | None = None
        #: The ``errorText`` of the ``error`` chunk that ended the stream, if one did.
        self.error_text: str | None = None
        #: The stream could not be applied past some chunk (what the client would throw on).
        self.broken = False
        self._continued = continued is not None and continued.get("role") == "assistant"
        self._written = self._continued
        self._unwritten_steps = 0
        self._stopped = False
        self._reset(orjson.loads(orjson.dumps(continued)) if self._continued else None)

    def _reset(self, message: dict[str, Any] | None, message_id: str = "") -> None:
        self._message: dict[str, Any] = message or {"id": message_id, "role": "assistant"}
        self._message.setdefault("parts", [])
        self._texts: dict[str, _Text] = {}
        self._reasoning: dict[str, _Text] = {}
        self._unjoined: list[_Text] = []
        self._pending_inputs: dict[str, tuple[dict[str, Any], PartialCall]] = {}
        self._partial: dict[str, PartialCall] = {}
        parts = self._message["parts"]
        step = max((i for i, p in enumerate(parts) if p.get("type") == "step-start"), default=-1)
        for part in parts[step + 1 :]:
            if is_tool(part) and part.get("state") == "input-streaming":
                name = part.get("toolName") or part["type"].partition("-")[2]
                entry = {**part, "toolName": name, "dynamic": part["type"] == "dynamic-tool"}
                self._partial[part["toolCallId"]] = PartialCall(
                    entry, self.major, part.get("rawInput") or ""
                )

    # -- reading -------------------------------------------------------------------------------

    @property
    def message(self) -> dict[str, Any] | None:
        """The message as the client last wrote it (``None`` when nothing was written). The
        assembler's own object: copy it to keep it past the next :meth:`feed`."""
        if not self._written:
            return None
        self._join()
        if self._unwritten_steps:
            parts = self._message["parts"]
            return {**self._message, "parts": parts[: len(parts) - self._unwritten_steps]}
        return self._message

    def _join(self) -> None:
        for text in self._unjoined:
            if text.pieces:
                joined = text.part["text"] + "".join(text.pieces)
                text.part["text"] = joined
                text.pieces.clear()
        self._unjoined.clear()
        for part, call in self._pending_inputs.values():
            raw = "".join(call.pieces)
            call.pieces = [raw]
            put(part, "input", raw if call.encoding == "text" else parse_partial_json(raw))
            part["rawInput"] = raw
        self._pending_inputs.clear()

    # -- feeding -------------------------------------------------------------------------------

    def feed_sse(self, bodies: Iterable[bytes]) -> None:
        """The bytes of an SSE response as the gateway writes it: one ``data:`` line per event
        (events never straddle two writes); comments and ``[DONE]`` are not chunks."""
        for body in bodies:
            for line in body.split(b"\n"):
                if line.startswith(_DATA_PREFIX) and line != _DONE_LINE:
                    self.feed(orjson.loads(line[len(_DATA_PREFIX) :]))

    def feed_written(self, chunks: Iterable[dict[str, Any]]) -> None:
        """Chunks as the gateway makes them, each read as the client reads its bytes back (a
        turn's own assembler is fed so, as it writes)."""
        for chunk in chunks:
            self.feed(as_written(chunk))

    def text_delta(self, part_id: str, delta: str) -> None:
        """A ``text-delta`` of the open text part ``part_id`` (the turn's fused text path,
        which writes no chunk)."""
        if self._stopped:
            return
        text = self._texts.get(part_id)
        if text is None:
            self.broken = self._stopped = True
            return
        if not text.pieces:
            self._unjoined.append(text)
        text.pieces.append(delta)
        self._wrote()

    def feed(self, chunk: dict[str, Any]) -> None:
        if self._stopped:
            return
        kind = chunk.get("type")
        handler = _HANDLERS.get(kind)  # type: ignore[arg-type]
        if handler is not None:
            try:
                handler(self, chunk)
            except _CANNOT_APPLY:
                self.broken = self._stopped = True
        elif isinstance(kind, str) and kind.startswith("data-"):
            self._join()
            self._data(chunk)

    def _wrote(self) -> None:
        self._written = True
        self._unwritten_steps = 0

    def _step_parts(self) -> list[dict[str, Any]]:
        parts: list[dict[str, Any]] = self._message["parts"]
        i = len(parts) - 1
        while i >= 0 and parts[i]["type"] != "step-start":
            i -= 1
        return parts[i + 1 :]

    # -- text and reasoning --------------------------------------------------------------------

    def _text_start(self, chunk: dict[str, Any]) -> None:
        self._open(chunk, self._texts, {"type": "text", "text": ""})

    def _reasoning_start(self, chunk: dict[str, Any]) -> None:
        self._open(chunk, self._reasoning, {"type": "reasoning", "id": chunk["id"], "text": ""})

    def _open(self, chunk: dict[str, Any], active: dict[str, _Text], part: dict[str, Any]) -> None:
        put(part, "providerMetadata", chunk.get("providerMetadata", MISSING))
        part["state"] = "streaming"
        active[chunk["id"]] = _Text(part)
        self._message["parts"].append(part)
        self._wrote()

    def _text_delta(self, chunk: dict[str, Any]) -> None:
        self._delta(chunk, self._texts)

    def _reasoning_delta(self, chunk: dict[str, Any]) -> None:
        self._delta(chunk, self._reasoning)

    def _delta(self, chunk: dict[str, Any], active: dict[str, _Text]) -> None:
        text = active[chunk["id"]]
        if not text.pieces:
            self._unjoined.append(text)
        text.pieces.append(chunk["delta"])
        metadata = chunk.get("providerMetadata", MISSING)
        if given(metadata):
            text.part["providerMetadata"] = metadata
        self._wrote()

    def _text_end(self, chunk: dict[str, Any]) -> None:
        part = self._close(chunk, self._texts)
        citations = chunk.get("citations", MISSING)
        if self.major >= 7 and given(citations):
            part["citations"] = citations

    def _reasoning_end(self, chunk: dict[str, Any]) -> None:
        self._close(chunk, self._reasoning)

    def _close(self, chunk: dict[str, Any], active: dict[str, _Text]) -> dict[str, Any]:
        self._join()
        part = active.pop(chunk["id"]).part
        part["state"] = "done"
        metadata = chunk.get("providerMetadata", MISSING)
        if given(metadata):
            part["providerMetadata"] = metadata
        self._wrote()
        return part

    # -- other content -------------------------------------------------------------------------

    def _file(self, chunk: dict[str, Any]) -> None:
        if chunk["type"] == "reasoning-file" and self.major < 7:
            return
        part = {"type": chunk["type"], "mediaType": chunk["mediaType"], "url": chunk["url"]}
        metadata = chunk.get("providerMetadata", MISSING)
        if self.major >= 6 and given(metadata):
            part["providerMetadata"] = metadata
        self._push(part)

    def _source_url(self, chunk: dict[str, Any]) -> None:
        part = {"type": "source-url", "sourceId": chunk["sourceId"], "url": chunk["url"]}
        self._push(part, chunk, ("title", "providerMetadata"))

    def _source_document(self, chunk: dict[str, Any]) -> None:
        part = {"type": "source-document", "sourceId": chunk["sourceId"]}
        self._push(part, chunk, ("mediaType", "title", "filename", "providerMetadata"))

    def _custom(self, chunk: dict[str, Any]) -> None:
        if self.major >= 7:
            self._push({"type": "custom", "kind": chunk["kind"]}, chunk, ("providerMetadata",))

    def _steering(self, chunk: dict[str, Any]) -> None:
        if self.major >= 7:
            self._push({"type": "steering-message", "id": chunk["id"], "parts": chunk["parts"]})

    def _push(
        self, part: dict[str, Any], chunk: dict[str, Any] | None = None, keys: tuple[str, ...] = ()
    ) -> None:
        self._join()
        for key in keys:
            put(part, key, chunk.get(key, MISSING))  # type: ignore[union-attr]
        self._message["parts"].append(part)
        self._wrote()

    def _data(self, chunk: dict[str, Any]) -> None:
        if chunk.get("transient"):
            return
        chunk_id = chunk.get("id", MISSING)
        if given(chunk_id):
            for part in self._message["parts"]:
                if part["type"] == chunk["type"] and part.get("id") == chunk_id:
                    put(part, "data", chunk.get("data", MISSING))
                    self._wrote()
                    return
        self._message["parts"].append(chunk)
        self._wrote()

    # -- steps, start, finish ------------------------------------------------------------------

    def _start_step(self, chunk: dict[str, Any]) -> None:
        self._join()
        self._message["parts"].append({"type": "step-start"})
        self._unwritten_steps += 1  # the client writes nothing for it

    def _finish_step(self, chunk: dict[str, Any]) -> None:
        if self.major < 7:  # 5 and 6 forget the open parts (a later delta would fail)
            self._join()
            self._texts, self._reasoning = {}, {}

    def _reset_step(self, chunk: dict[str, Any]) -> None:
        if self.major < 7:
            return
        self._join()
        step = self._step_parts()
        self._texts, self._reasoning, self._partial = {}, {}, {}
        if step:
            del self._message["parts"][-len(step) :]
            self._wrote()

    def _start(self, chunk: dict[str, Any]) -> None:
        self._join()
        message_id = chunk.get("messageId", MISSING)
        reset = given(message_id) and message_id != self._message["id"]
        if reset:  # readUIMessageStream's resetStateOnMessageIdChange
            self._reset(None, message_id)
        if given(message_id):
            self._message["id"] = message_id
        metadata = chunk.get("messageMetadata", MISSING)
        self._metadata(metadata)
        if reset or given(message_id) or given(metadata):
            self._wrote()

    def _finish(self, chunk: dict[str, Any]) -> None:
        reason = chunk.get("finishReason", MISSING)
        if given(reason):
            self.finish_reason = reason
        self._message_metadata(chunk)

    def _message_metadata(self, chunk: dict[str, Any]) -> None:
        metadata = chunk.get("messageMetadata", MISSING)
        if given(metadata):
            self._metadata(metadata)
            self._wrote()

    def _metadata(self, metadata: Any) -> None:
        if given(metadata):
            old = self._message.get("metadata")
            self._message["metadata"] = (
                merge_metadata(old, metadata) if old is not None else metadata
            )

    def _error(self, chunk: dict[str, Any]) -> None:
        self.error_text = chunk.get("errorText")
        self._stopped = True  # useChat stops reading at an error chunk


_HANDLERS: dict[str, Any] = {
    "text-start": MessageAssembler._text_start,
    "text-delta": MessageAssembler._text_delta,
    "text-end": MessageAssembler._text_end,
    "reasoning-start": MessageAssembler._reasoning_start,
    "reasoning-delta": MessageAssembler._reasoning_delta,
    "reasoning-end": MessageAssembler._reasoning_end,
    "file": MessageAssembler._file,
    "reasoning-file": MessageAssembler._file,
    "source-url": MessageAssembler._source_url,
    "source-document": MessageAssembler._source_document,
    "custom": MessageAssembler._custom,
    "steering-message": MessageAssembler._steering,
    "tool-input-start": MessageAssembler._tool_input_start,
    "tool-input-delta": MessageAssembler._tool_input_delta,
    "tool-input-available": MessageAssembler._tool_input_available,
    "tool-input-error": MessageAssembler._tool_input_error,
    "tool-approval-request": MessageAssembler._approval_request,
    "tool-approval-response": MessageAssembler._approval_response,
    "tool-output-denied": MessageAssembler._output_denied,
    "tool-output-available": MessageAssembler._tool_output_available,
    "tool-output-error": MessageAssembler._tool_output_error,
    "start-step": MessageAssembler._start_step,
    "finish-step": MessageAssembler._finish_step,
    "reset-step": MessageAssembler._reset_step,
    "start": MessageAssembler._start,
    "finish": MessageAssembler._finish,
    "message-metadata": MessageAssembler._message_metadata,
    "error": MessageAssembler._error,
}
