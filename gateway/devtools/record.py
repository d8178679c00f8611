"""``chunkbridge record``: start a turn as the gateway would and write the upstream's raw frames.

The turn runs through the same connector (the dialect's own prompt frame or HTTP request) and the
same turn driver as a served one; a tap on the upstream writes every frame it hands over, and the
turn's own ending (the dialect's terminal event) says when the recording is complete.
"""

from __future__ import annotations

import time
from pathlib import Path

from chunkbridge.gateway.config import GatewayConfig
from chunkbridge.gateway.devtools.recordings import RecordingWriter
from chunkbridge.gateway.service import Gateway
from chunkbridge.gateway.transports.base import Upstream
from chunkbridge.gateway.turn.driver import TurnDriver
from chunkbridge.kit import TranslatorOptions, TurnInput
from chunkbridge.protocol_specs.chat_request import ChatRequest
from chunkbridge.translators.core.turn import Turn

__all__ = ["record"]


class _Tap:
    """An upstream that writes every frame it hands over to a recording."""

    def __init__(self, upstream: Upstream, writer: RecordingWriter) -> None:
        self._upstream = upstream
        self._writer = writer
        self._started = time.monotonic()

    async def recv(self) -> str | bytes | None:
        frame = await self._upstream.recv()
        if frame is not None:
            self._writer.write(frame, (time.monotonic() - self._started) * 1000)
        return frame

    def buffered(self) -> bool:
        return self._upstream.buffered()

    def wake(self) -> None:
        self._upstream.wake()

    async def gather(self, seconds: float) -> None:
        await self._upstream.gather(seconds)

    async def aclose(self, *, abort: bool = False) -> None:
        await self._upstream.aclose(abort=abort)


async def record(
    config: GatewayConfig,
    prompt: str,
    output: Path,
    *,
    session_id: str = "recording",
    max_seconds: float = 300,
) -> int:
    """Send ``prompt``, write every frame (one per line) until the turn ends; return the count.

    Pauses go to ``<output>.timing`` (milliseconds since the prompt, one per line) so that
    ``mock-upstream --timing recorded`` can replay them.
    """
    config = config.model_copy(update={"total_timeout": max_seconds, "flush_interval": 0})
    gateway = Gateway(config)
    request = ChatRequest.model_validate(
        {
            "id": "rec",
            "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": prompt}]}],
        }
    )
    turn_input = TurnInput(
        request, session_id, "rec-run", gateway.dialect_settings, gateway.history
    )
    try:
        upstream = await gateway.connector.open(turn_input, {})
        options = TranslatorOptions(settings=gateway.dialect_settings)
        turn = Turn(gateway.dialect.translator(options))
        with RecordingWriter(output) as writer:
            tap = _Tap(upstream, writer)
            driver = TurnDriver(tap, turn, gateway.driver_settings)

            async def discard(body: bytes) -> None:
                pass

            try:
                await driver.run(discard)
            finally:
                await tap.aclose(abort=driver.abandoned)
            return writer.count
    finally:
        await gateway.connector.aclose()
