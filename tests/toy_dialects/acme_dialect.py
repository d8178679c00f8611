"""A toy WebSocket dialect, written as a third-party package writes one
(docs/writing-a-dialect.md): Acme agents stream ``token`` events and end with ``done`` or
``failed``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chunkbridge.kit import (
    CloseReason,
    CloseRequest,
    Dialect,
    Item,
    Translator,
    TurnInput,
    WebSocketContract,
    error_message,
    require_str,
)


class AcmeTranslator(Translator):
    HANDLERS = {"token": "_on_token", "done": "_on_done", "failed": "_on_failed"}

    def _on_token(self, event: dict[str, Any]) -> Sequence[Item]:
        return self.text_delta(require_str(event, "text"))  # opens the text part when needed

    def _on_done(self, event: dict[str, Any]) -> Sequence[Item]:
        return [*self.end_parts(), CloseRequest(CloseReason.COMPLETED, finish_reason="stop")]

    def _on_failed(self, event: dict[str, Any]) -> Sequence[Item]:
        text = error_message(event.get("message"), "The Acme agent failed.")
        return [CloseRequest(CloseReason.UPSTREAM_ERROR, text)]

    def fast_text_delta(self, event: dict[str, Any]) -> str | None:
        """Optional: plain tokens take the pipeline's hot path (same result, less work)."""
        text = event.get("text")
        return text if event.get("type") == "token" and type(text) is str and text else None


def prompt_frame(turn: TurnInput) -> dict[str, Any]:
    return {"op": "ask", "run": turn.run_id, "text": turn.require_prompt().text}


def abort_frame(turn: TurnInput) -> dict[str, Any]:
    return {"op": "cancel", "run": turn.run_id}


DIALECT = Dialect(
    name="acme",
    summary="Acme agent events (WebSocket)",
    translator=AcmeTranslator,
    websocket=WebSocketContract(prompt_frame=prompt_frame, abort_frame=abort_frame),
)
