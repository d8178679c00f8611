"""The tool calls of one AG-UI run: whose they are, what they were given, what the agent calls
their messages.

A call the request declared (a frontend tool) is the app's to run; any other is the agent's,
which shows when its ``TOOL_CALL_RESULT`` arrives (``providerExecuted``). Arguments that end up
not JSON are a ``tool-input-error`` (the raw text kept as the part's input), and a result the
agent sends for such a call is its error, never an output: the part ends ``output-error``, as
the AI SDK's own loop ends a call it could not parse.

The ids the agent gives its messages go where the client keeps them, so that the next request
can send them back: the assistant message a call belongs to (``parentMessageId``) in the call's
``providerMetadata`` (every major keeps it on the part), the id of each result's tool message in
the answer's message metadata (``toolMessageIds``): no major keeps metadata of a tool result in
ai 5, and an agent may name its tool messages only in its closing ``MESSAGES_SNAPSHOT``
(LangGraph's results carry the call id, its checkpoint another).
"""

from __future__ import annotations

from typing import Any

from chunkbridge.kit import Chunk, IdFactory, StreamedToolCalls, json_text
from chunkbridge.protocol_specs import ag_ui as spec

__all__ = ["Calls"]

_PROVIDER = spec.METADATA_KEY
_INPUT_ENDS = frozenset({"tool-input-available", "tool-input-error"})


class Calls:
    """The run's tool calls, keyed by call id."""

    def __init__(
        self,
        ids: IdFactory,
        frontend: frozenset[str],
        flags: dict[str, Any],
        agent_flags: dict[str, Any],
    ) -> None:
        """``frontend``: the tools the request declared; ``flags``: what every chunk of a call
        carries, ``agent_flags``: what the output of a call the agent ran carries."""
        self._frontend = frontend
        self._flags, self._agent_flags = flags, agent_flags
        # Whether the agent runs a call shows when its result arrives (then the output carries
        # providerExecuted); until then an undeclared call looks like any other, so that a call
        # the agent leaves to the app (pendingToolCallIds) ends at input-available as the app's.
        self._agent = StreamedToolCalls(ids, flags)
        self._app = StreamedToolCalls(ids, flags)
        #: call id → whether the app runs it (the call's name was declared).
        self._app_runs: dict[str, bool] = {}
        #: call id → the assistant message the agent says the call belongs to.
        self._parents: dict[str, str] = {}
        #: calls whose arguments were not JSON → the input error's text.
        self._invalid: dict[str, str] = {}
        #: calls whose result arrived.
        self._answered: set[str] = set()
        #: call id → the agent's id of the call's result message (the snapshot's, once it came).
        self.result_ids: dict[str, str] = {}

    def __contains__(self, call_id: str) -> bool:
        return call_id in self._app_runs

    def waiting(self, pending: Any) -> bool:
        """Calls wait for the app: the agent says so (``pendingToolCallIds``), or one has no
        result."""
        return bool(pending) or any(c not in self._answered for c in self._app_runs)

    def _tools(self, call_id: str, name: str | None) -> StreamedToolCalls:
        app = self._app_runs.get(call_id)
        if app is None:
            app = self._app_runs[call_id] = name in self._frontend
        return self._app if app else self._agent

    def delta(
        self,
        call_id: str,
        *,
        name: str | None = None,
        arguments: str | None = None,
        parent: str | None = None,
    ) -> list[Chunk]:
        if parent and call_id not in self._parents:
            self._parents[call_id] = parent
        tools = self._tools(call_id, name)
        return tools.delta(call_id, call_id=call_id, name=name, arguments=arguments)

    def complete(self, call_id: str | None = None) -> list[Chunk]:
        """End one call's input (``call_id``) or every open one's."""
        if call_id is None:
            chunks = [*self._agent.complete(), *self._app.complete()]
        elif call_id in self._app_runs:
            chunks = self._tools(call_id, None).complete(call_id)
        else:
            return []
        for chunk in chunks:
            self._input_ended(chunk)
        return chunks

    def _input_ended(self, chunk: Chunk) -> None:
        if chunk["type"] not in _INPUT_ENDS:
            return
        call_id = chunk["toolCallId"]
        parent = self._parents.get(call_id)
        if parent is not None:
            chunk["providerMetadata"] = {_PROVIDER: {"parentMessageId": parent}}
        if chunk["type"] == "tool-input-error":
            self._invalid[call_id] = chunk["errorText"]

    def result(self, event: dict[str, Any], call_id: str) -> list[Chunk]:
        """A ``TOOL_CALL_RESULT``: the call's output, or its error."""
        out = self.complete(call_id)  # a result without an END
        app = self._app_runs.get(call_id)
        if app is not None:
            self._answered.add(call_id)
            message_id = event.get("messageId")
            if isinstance(message_id, str) and message_id:
                self.result_ids[call_id] = message_id
        # The agent ran it (unless the call was declared as the app's); an unknown call id:
        # the guard reports it.
        flags = self._agent_flags if app is False else self._flags
        error = event.get("error")
        content = event.get("content")
        if not (isinstance(error, str) and error) and call_id in self._invalid:
            # what the agent told the model about input it could not parse
            told = content if isinstance(content, str) or content is None else json_text(content)
            error = told or self._invalid[call_id]
        if isinstance(error, str) and error:
            out.append(
                {"type": "tool-output-error", "toolCallId": call_id, "errorText": error, **flags}
            )
            return out
        output = spec.tool_output(content)
        out.append(
            {"type": "tool-output-available", "toolCallId": call_id, "output": output, **flags}
        )
        return out

    def snapshot(self, messages: Any) -> None:
        """The agent's own record of the thread (``MESSAGES_SNAPSHOT``): the ids it keeps its
        tool messages under, for this run's results."""
        for message in messages if isinstance(messages, list) else []:
            if not isinstance(message, dict) or message.get("role") != "tool":
                continue
            call_id, message_id = message.get("toolCallId"), message.get("id")
            if call_id in self._answered and isinstance(message_id, str) and message_id:
                self.result_ids[call_id] = message_id
