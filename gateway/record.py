"""``chunkbridge record``: connect as the gateway would and write the upstream's raw frames."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from urllib.parse import quote

import orjson

from gateway.config import load_config
from gateway.dialects import create_translator
from gateway.frames import build_frames
from gateway.transports import UpstreamEnded, open_websocket
from protocol_specs.chat_request import ChatRequest

__all__ = ["record"]


def _one_line(text: str) -> str:
    """A frame as one .jsonl line: JSON re-encoded compactly (same key order), else as is."""
    try:
        return orjson.dumps(orjson.loads(text)).decode()
    except orjson.JSONDecodeError:
        return text.replace("\r", " ").replace("\n", " ")


async def record(
    upstream: str,
    dialect: str,
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
    config = load_config(None, upstream=upstream, dialect=dialect)
    request = ChatRequest.model_validate(
        {
            "id": "rec",
            "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": prompt}]}],
        }
    )
    frames = build_frames(config, request, session_id, "rec-run")
    url = upstream.replace("{session_id}", quote(session_id, safe=""))
    connection = await open_websocket(url, headers={}, connect_timeout=config.connect_timeout)
    translator = create_translator(dialect)
    count = 0
    started = time.monotonic()
    with (
        output.open("w", encoding="utf-8") as lines,
        output.with_name(output.name + ".timing").open("w") as timing,
    ):
        await connection.send(frames.prompt)
        try:
            async with asyncio.timeout(max_seconds):
                while True:
                    try:
                        frame = await connection.recv()
                    except UpstreamEnded:
                        break
                    text = frame if isinstance(frame, str) else frame.decode("utf-8", "replace")
                    lines.write(_one_line(text) + "\n")
                    timing.write(f"{(time.monotonic() - started) * 1000:.1f}\n")
                    count += 1
                    translator.feed_frame(text)
                    if translator.done:
                        break
        except TimeoutError:
            pass
        finally:
            await connection.aclose()
    return count
