"""Tool parts of an assembled message: the ``tool-*`` chunks as the client of each major applies
them (:mod:`chunkbridge.translators.core.message_assembly` holds the rest).

The client updates a tool part in place through one helper per kind (``updateToolPart``,
``updateDynamicToolPart``): every field of the update is written, so a field the update leaves
``undefined`` disappears (an ``output`` when the call errs, a ``rawInput`` once the input is
complete). ai 5 does less — no titles, encodings or result metadata, and it finds a part by the
chunk's ``dynamic`` flag —; 6 and 7 differ only in approvals answered by stream and in what an
input error keeps.
"""

from __future__ import annotations

from typing import Any

from chunkbridge.translators.core.partial_json import MISSING

__all__ = ["PartialCall", "ToolChunks", "given", "is_tool", "put"]

_RESULT_STATES = ("output-available", "output-error")


def is_tool(part: dict[str, Any]) -> bool:
    kind: str = part["type"]
    return kind == "dynamic-tool" or kind.startswith("tool-")


def put(target: dict[str, Any], key: str, value: Any) -> None:
    """``target[key] = value`` where ``undefined`` (:data:`MISSING`) removes the key."""
    if value is MISSING:
        target.pop(key, None)
    else:
        target[key] = value


def given(value: Any) -> bool:
    """JavaScript's ``value != null``."""
    return value is not MISSING and value is not None


class PartialCall:
    """A tool call whose input streams (the client's ``partialToolCalls`` entry)."""

    __slots__ = ("dynamic", "encoding", "metadata", "pieces", "title", "tool_name")

    def __init__(self, chunk: dict[str, Any], major: int, text: str = "") -> None:
        self.tool_name: str = chunk.get("toolName", "")
        self.dynamic = bool(chunk.get("dynamic"))
        newer = major >= 6
        self.encoding = chunk.get("inputEncoding", MISSING) if newer else MISSING
        self.title = chunk.get("title", MISSING) if newer else MISSING
        self.metadata = chunk.get("toolMetadata", MISSING) if newer else MISSING
        self.pieces = [text] if text else []


class ToolChunks:
    """The tool chunk handlers of :class:`MessageAssembler` (a mixin: the state is its)."""

    major: int
    _message: dict[str, Any]
    _partial: dict[str, PartialCall]
    _pending_inputs: dict[str, tuple[dict[str, Any], PartialCall]]

    def _join(self) -> None:
        raise NotImplementedError

    def _wrote(self) -> None:
        raise NotImplementedError

    def _step_parts(self) -> list[dict[str, Any]]:
        raise NotImplementedError

    # -- the client's two update helpers, as one -----------------------------------------------

    def _update(
        self, options: dict[str, Any], dynamic: bool, existing: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """``updateToolPart`` / ``updateDynamicToolPart``: the part updated or pushed."""
        part = existing
        if part is None:
            part = self._step_tool_part(options["toolCallId"], dynamic)
        newer = self.major >= 6
        if part is not None:
            _rewrite_part(part, options, dynamic, newer)
            return part
        part = _new_part(options, dynamic, newer)
        self._message["parts"].append(part)
        return part

    def _step_tool_part(self, call_id: str, dynamic: bool) -> dict[str, Any] | None:
        """The call's part of this kind (dynamic or not) in the current step, if there is one."""
        for candidate in self._step_parts():
            kind = candidate["type"]
            same_kind = kind == "dynamic-tool" if dynamic else kind.startswith("tool-")
            if same_kind and candidate.get("toolCallId") == call_id:
                return candidate
        return None

    def _invocation(self, call_id: str, kinds: str = "any") -> dict[str, Any]:
        """``getToolInvocation``: the call's part in the current step, else the latest one;
        ``kinds`` is ``any``, ``static`` or ``dynamic`` (ai 5 looks by kind)."""

        def matches(part: dict[str, Any]) -> bool:
            kind = part["type"]
            if kinds == "dynamic":
                ok = kind == "dynamic-tool"
            elif kinds == "static":
                ok = kind.startswith("tool-")
            else:
                ok = kind == "dynamic-tool" or kind.startswith("tool-")
            return ok and part.get("toolCallId") == call_id

        every: list[dict[str, Any]] = self._message["parts"]
        found = next(filter(matches, self._step_parts()), None)
        if found is None:
            found = next(filter(matches, reversed(every)), None)
        if found is None:
            raise KeyError(call_id)  # the client throws: the stream cannot be applied further
        return found

    # -- handlers ------------------------------------------------------------------------------

    def _tool_input_start(self, chunk: dict[str, Any]) -> None:
        self._join()
        call = PartialCall(chunk, self.major)
        self._partial[chunk["toolCallId"]] = call
        options = _only({**chunk, "state": "input-streaming"}, _START_KEYS)
        if self.major < 6:
            options = _only(options, _OLD_START_KEYS)
        self._update(options, call.dynamic)
        self._wrote()

    def _tool_input_delta(self, chunk: dict[str, Any]) -> None:
        call_id = chunk["toolCallId"]
        call = self._partial[call_id]
        call.pieces.append(chunk["inputTextDelta"])
        if call_id not in self._pending_inputs:
            options = {
                "toolCallId": call_id,
                "toolName": call.tool_name,
                "state": "input-streaming",
                "inputEncoding": call.encoding,
                "title": call.title,
                "toolMetadata": call.metadata,
            }
            part = self._update(options, call.dynamic)
            self._pending_inputs[call_id] = (part, call)  # input and rawInput: at the next join
        self._wrote()

    def _tool_input_available(self, chunk: dict[str, Any]) -> None:
        self._join()
        options = {**chunk, "state": "input-available"}
        if self.major < 6:
            options.pop("title", None)
            options.pop("toolMetadata", None)
        self._update(_only(options, _INPUT_KEYS), bool(chunk.get("dynamic")))
        self._wrote()

    def _tool_input_error(self, chunk: dict[str, Any]) -> None:
        self._join()
        if self.major < 6:
            dynamic = bool(chunk.get("dynamic"))
        else:
            existing = next(
                (
                    p
                    for p in self._step_parts()
                    if is_tool(p) and p["toolCallId"] == chunk["toolCallId"]
                ),
                None,
            )
            dynamic = existing["type"] == "dynamic-tool" if existing else bool(chunk.get("dynamic"))
        options = _only({**chunk, "state": "output-error"}, _ERROR_KEYS)
        if self.major < 6:
            options.pop("toolMetadata", None)
        if not dynamic and self.major < 7:
            options["rawInput"], options["input"] = options.get("input", MISSING), MISSING
        self._update(options, dynamic)
        self._wrote()

    def _approval_request(self, chunk: dict[str, Any]) -> None:
        if self.major < 6:
            return
        self._join()
        part = self._invocation(chunk["toolCallId"])
        part["state"] = "approval-requested"
        approval: dict[str, Any] = {"id": chunk["approvalId"]}
        if given(chunk.get("approvalDescriptor", MISSING)):
            approval["descriptor"] = chunk["approvalDescriptor"]
        if "inputSchemaInput" in chunk:
            approval["inputSchemaInput"] = chunk["inputSchemaInput"]
        if self.major >= 7:
            if given(chunk.get("reason", MISSING)):
                approval["requestReason"] = chunk["reason"]
            if chunk.get("isAutomatic") is True:
                approval["isAutomatic"] = True
        if given(chunk.get("signature", MISSING)):
            approval["signature"] = chunk["signature"]
        part["approval"] = approval
        self._wrote()

    def _approval_response(self, chunk: dict[str, Any]) -> None:
        if self.major < 7:
            return
        self._join()
        approval_id = chunk["approvalId"]
        part = next(
            p
            for p in self._message["parts"]
            if is_tool(p)
            and isinstance(p.get("approval"), dict)
            and p["approval"].get("id") == approval_id
        )
        part["state"] = "approval-responded"
        answer = {**part["approval"], "id": approval_id}
        put(answer, "approved", chunk.get("approved", MISSING))
        if given(chunk.get("reason", MISSING)):
            answer["reason"] = chunk["reason"]
        part["approval"] = answer
        if given(chunk.get("providerExecuted", MISSING)):
            part["providerExecuted"] = chunk["providerExecuted"]
        if given(chunk.get("providerMetadata", MISSING)):
            part["callProviderMetadata"] = chunk["providerMetadata"]
        self._wrote()

    def _output_denied(self, chunk: dict[str, Any]) -> None:
        if self.major < 6:
            return
        self._join()
        self._invocation(chunk["toolCallId"])["state"] = "output-denied"
        self._wrote()

    def _tool_output_available(self, chunk: dict[str, Any]) -> None:
        self._tool_result(chunk, "output-available", ("output", "preliminary"))

    def _tool_output_error(self, chunk: dict[str, Any]) -> None:
        self._tool_result(chunk, "output-error", ("errorText",))

    def _tool_result(self, chunk: dict[str, Any], state: str, keys: tuple[str, ...]) -> None:
        self._join()
        call_id = chunk["toolCallId"]
        if self.major < 6:
            dynamic = bool(chunk.get("dynamic"))
            part = self._invocation(call_id, "dynamic" if dynamic else "static")
        else:
            part = self._invocation(call_id)
            dynamic = part["type"] == "dynamic-tool"
        options = {
            "toolCallId": call_id,
            "toolName": part["toolName"] if dynamic else part["type"].split("-", 1)[1],
            "state": state,
            "input": part.get("input", MISSING),
        }
        for key in keys:
            options[key] = chunk.get(key, MISSING)
        if not dynamic and state == "output-error":
            options["rawInput"] = part.get("rawInput", MISSING)
        if self.major >= 6:
            options["providerExecuted"] = chunk.get("providerExecuted", MISSING)
            options["providerMetadata"] = chunk.get("providerMetadata", MISSING)
            options["title"] = part.get("title", MISSING)
            metadata = chunk.get("toolMetadata", MISSING)
            options["toolMetadata"] = (
                metadata if given(metadata) else part.get("toolMetadata", MISSING)
            )
        elif not (dynamic and state == "output-available"):
            options["providerExecuted"] = chunk.get("providerExecuted", MISSING)
        self._update(options, dynamic, part)
        self._wrote()


_OLD_START_KEYS = ("toolCallId", "toolName", "state", "providerExecuted")
_START_KEYS = (
    *_OLD_START_KEYS,
    "inputEncoding",
    "title",
    "toolMetadata",
    "providerMetadata",
)
_INPUT_KEYS = (
    "toolCallId",
    "toolName",
    "state",
    "input",
    "providerExecuted",
    "providerMetadata",
    "title",
    "toolMetadata",
)
_ERROR_KEYS = (
    "toolCallId",
    "toolName",
    "state",
    "input",
    "errorText",
    "providerExecuted",
    "providerMetadata",
    "toolMetadata",
)


def _rewrite_part(
    part: dict[str, Any], options: dict[str, Any], dynamic: bool, newer: bool
) -> None:
    """The client's update of an existing part: every field of the update is written, so one the
    update leaves ``undefined`` is removed; the executor, title and tool metadata persist."""
    get = options.get
    state = options["state"]
    part["state"] = state
    if dynamic:
        part["toolName"] = options["toolName"]
    elif newer:
        part["type"] = f"tool-{options['toolName']}"
    for key in ("input", "output", "errorText", "rawInput"):
        put(part, key, get(key, MISSING))
    if newer:
        encoding = get("inputEncoding", MISSING)
        put(part, "inputEncoding", encoding if given(encoding) else MISSING)
    put(part, "preliminary", get("preliminary", MISSING))
    if newer:
        for key in ("title", "toolMetadata"):
            if get(key, MISSING) is not MISSING:
                part[key] = options[key]
    executed = get("providerExecuted", MISSING)
    put(
        part,
        "providerExecuted",
        executed if given(executed) else part.get("providerExecuted", MISSING),
    )
    metadata = get("providerMetadata", MISSING)
    if given(metadata):
        if newer and state in _RESULT_STATES:
            part["resultProviderMetadata"] = metadata
        elif newer or state == "input-available":
            part["callProviderMetadata"] = metadata


def _new_part(options: dict[str, Any], dynamic: bool, newer: bool) -> dict[str, Any]:
    """The part the client pushes for a call the step has no part of yet."""
    get = options.get
    state = options["state"]
    if dynamic:
        part = {"type": "dynamic-tool", "toolName": options["toolName"]}
    else:
        part = {"type": f"tool-{options['toolName']}"}
    part["toolCallId"] = options["toolCallId"]
    part["state"] = state
    keys = ["input", "output", "errorText", "providerExecuted", "preliminary"]
    if not dynamic:
        keys.append("rawInput")
    if newer:
        keys.append("title")
        if given(get("inputEncoding", MISSING)):
            part["inputEncoding"] = options["inputEncoding"]
        if get("toolMetadata", MISSING) is not MISSING:
            part["toolMetadata"] = options["toolMetadata"]
    for key in keys:
        put(part, key, get(key, MISSING))
    metadata = get("providerMetadata", MISSING)
    if given(metadata):
        result = newer and state in _RESULT_STATES
        part["resultProviderMetadata" if result else "callProviderMetadata"] = metadata
    return part


def _only(options: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {key: options[key] for key in keys if key in options}
