"""Sampling: a tool server asks the gateway's model for a completion (MCP
``sampling/createMessage``) and gets it through the same dialect, connector and turn as a chat.

A server that samples spends the deployment's tokens, so it is opt-in per server (``sampling =
true``; the MCP side is :mod:`chunkbridge.gateway.tools.mcp_sampling`). The request becomes a
one-message conversation of the provider dialect, with the server's system prompt, no tools
(neither the app's nor the gateway's: a sampled answer runs nothing) and at most the tokens the
server and the configuration allow; the answer is the text the client would have read of it
(the turn's own assembler), with its finishReason and usage.
"""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass
from typing import Any

from chunkbridge.gateway.transports.connectors import Connector
from chunkbridge.gateway.turn.driver import DriverSettings, TurnDriver
from chunkbridge.kit import Dialect, TranslatorOptions, TurnInput
from chunkbridge.protocol_specs.chat_request import ChatRequest
from chunkbridge.translators.core.closing import CloseReason
from chunkbridge.translators.core.turn import Turn, TurnOptions

__all__ = ["Sampled", "Sampler", "SamplingFailed"]


class SamplingFailed(Exception):
    """The model gave no answer (its error, or the turn's end, says why)."""


@dataclass(frozen=True, slots=True)
class Sampled:
    text: str
    model: str
    #: The UI stream's finishReason (``stop``, ``length``…).
    finish_reason: str | None
    usage: dict[str, Any] | None


class Sampler:
    """Completions from the gateway's provider, for tool servers (see the module)."""

    def __init__(
        self,
        dialect: Dialect,
        connector: Connector,
        settings: Any,
        options: TranslatorOptions,
        driver_settings: DriverSettings,
    ) -> None:
        #: The app's provider settings (not the loop's: no gateway tools).
        self.settings = settings
        self._dialect = dialect
        self._connector = connector
        self._options = options
        self._driver_settings = driver_settings

    async def complete(
        self, messages: list[dict[str, Any]], system: str, max_tokens: int, model: str | None
    ) -> Sampled:
        """The model's answer to ``messages`` (``UIMessage`` JSON, user and assistant)."""
        update: dict[str, Any] = {"system": system, "max_output_tokens": max_tokens, "tools": {}}
        if model:
            update["model"] = model
        settings = self.settings.model_copy(update=update)
        request = ChatRequest.model_validate({"messages": messages})
        turn_input = TurnInput(request, "mcp-sampling", uuid.uuid4().hex, settings, "full")
        options = dataclasses.replace(self._options, settings=settings)
        turn = Turn(self._dialect.translator(options), TurnOptions(assemble=True))
        driver = TurnDriver(await self._connector.open(turn_input, {}), turn, self._driver_settings)
        try:
            await driver.run(_discard)
        finally:
            await driver.aclose(abort=not turn.done)
        return _answer(turn, settings.model)


def _answer(turn: Turn, model: str) -> Sampled:
    assembler = turn.assembler
    assert assembler is not None
    message = assembler.message or {"parts": []}
    if turn.close_reason is not CloseReason.COMPLETED or assembler.error_text is not None:
        raise SamplingFailed(assembler.error_text or "the model's answer did not complete")
    text = "".join(p.get("text", "") for p in message["parts"] if p.get("type") == "text")
    closed_by = turn.closed_by
    metadata = closed_by.message_metadata if closed_by is not None else None
    usage = metadata.get("usage") if isinstance(metadata, dict) else None
    return Sampled(text, model, turn.finish_reason, usage if isinstance(usage, dict) else None)


async def _discard(body: bytes) -> None:
    pass
