"""Sampling, the MCP side: a server's ``sampling/createMessage`` as a completion of the gateway's
model (opt-in per server: ``sampling = true``; the model call is
:class:`chunkbridge.gateway.turn.sampling.Sampler`'s, given to the tool sources as
:class:`Complete`).

The request's messages become a conversation (text; images and audio as files), its system
prompt the model's, its ``maxTokens`` bounded by ``sampling_max_tokens``; the model is the
gateway's, or ``sampling_model``. A server may sample at most ``sampling_per_call`` times per call
it has running (a tool that loops on the model would spend the deployment's tokens unbounded);
past that, and when the model fails, the server gets an error it can report. Tool use inside
sampling (``tools`` in the request) is not offered: the answer is text.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from chunkbridge.gateway.logging import get_logger
from chunkbridge.gateway.tool_settings import ToolServerSettings

__all__ = ["Complete", "Completion", "SampleReport", "SamplingGate"]


class Completion(Protocol):
    """The model's answer: its text, the model that gave it, why it stopped."""

    @property
    def text(self) -> str: ...

    @property
    def model(self) -> str: ...

    @property
    def finish_reason(self) -> str | None: ...

    @property
    def usage(self) -> dict[str, Any] | None: ...


#: Told of each answer sampled while a call ran (the answer, its seconds): the turn that made
#: the call adds its usage and traces it.
SampleReport = Callable[[Completion, float], None]


class Complete(Protocol):
    """The gateway's model: ``messages`` (``UIMessage`` JSON) answered under ``system``."""

    async def complete(
        self, messages: list[dict[str, Any]], system: str, max_tokens: int, model: str | None
    ) -> Completion: ...


#: The UI stream's finishReason → MCP's ``stopReason``.
STOP_REASONS = {"stop": "endTurn", "length": "maxTokens", "tool-calls": "toolUse"}


class SamplingGate:
    """One server's sampling: its budget per running call, and the answer (see the module)."""

    def __init__(self, server: str, settings: ToolServerSettings, model: Complete) -> None:
        self.server = server
        self.settings = settings
        self.model = model
        #: Calls of this server running now, and the samples they took.
        self.calls = 0
        self._samples = 0
        #: The running calls' reports (a sample is reported to the call when it runs alone:
        #: the protocol links a sampling request to no call).
        self._reports: list[SampleReport | None] = []
        self.log = get_logger("chunkbridge.tools")

    @contextlib.contextmanager
    def running(self, report: SampleReport | None = None) -> Iterator[None]:
        """A call of the server runs: it may sample (the budget grows while it runs), and is
        told of what it sampled (``report``)."""
        self.calls += 1
        self._reports.append(report)
        try:
            yield
        finally:
            self.calls -= 1
            self._reports.remove(report)
            if self.calls <= 0:
                self.calls = self._samples = 0

    async def answer(self, context: Any, params: Any) -> Any:
        """The SDK's ``sampling_callback``: a ``CreateMessageResult``, or ``ErrorData``."""
        from mcp.types import INVALID_REQUEST, CreateMessageResult, ErrorData, TextContent

        limit = self.settings.sampling_per_call * max(self.calls, 1)
        if self._samples >= limit:
            why = f"sampling_per_call ({self.settings.sampling_per_call}) reached"
            self.log.warning("tools.sampling_refused", server=self.server, reason=why)
            return ErrorData(code=INVALID_REQUEST, message=why)
        self._samples += 1
        max_tokens = min(params.max_tokens, self.settings.sampling_max_tokens)
        messages = [_message(i, m) for i, m in enumerate(params.messages)]
        system = params.system_prompt or ""
        started = time.monotonic()
        try:
            done = await self.model.complete(
                messages, system, max_tokens, self.settings.sampling_model
            )
        except Exception as exc:  # the model's failure, for the server to report
            self.log.warning("tools.sampling_failed", server=self.server, error=str(exc))
            return ErrorData(code=INVALID_REQUEST, message=f"the model did not answer: {exc}")
        self.log.info("tools.sampled", server=self.server, model=done.model, max_tokens=max_tokens)
        if len(self._reports) == 1 and self._reports[0] is not None:
            self._reports[0](done, time.monotonic() - started)
        return CreateMessageResult(
            role="assistant",
            content=TextContent(type="text", text=done.text),
            model=done.model,
            stop_reason=STOP_REASONS.get(done.finish_reason or "", done.finish_reason),
        )


def _message(index: int, message: Any) -> dict[str, Any]:
    """A sampling message as ``UIMessage`` JSON: text parts, media as data-URL files."""
    content = message.content if isinstance(message.content, list) else [message.content]
    parts: list[dict[str, Any]] = []
    for block in content:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append({"type": "text", "text": block.text})
        elif kind in ("image", "audio"):
            url = f"data:{block.mime_type};base64,{block.data}"
            parts.append({"type": "file", "mediaType": block.mime_type, "url": url})
    return {"id": f"sampling-{index}", "role": message.role, "parts": parts}
