"""OpenAI-compatible HTTP upstreams: ``POST {base}/v1/chat/completions`` with ``stream: true``.

429 and 5xx answers are retried with exponential backoff (honouring ``Retry-After``, capped)
before the first byte, at most ``max_retries`` times. Another 4xx is not retried: its body (the
provider's error object) becomes the stream's single frame, so the translator ends the turn with an
``error`` chunk carrying the provider's message. The SSE body is decoded by the sans-I/O
:class:`~translators.sse_codec.SseDecoder`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson

from gateway.errors import UpstreamAuthRejected, UpstreamUnavailable
from gateway.transports.base import UpstreamEnded, map_upstream_errors
from translators.sse_codec import SseDecoder

__all__ = ["OpenAIHttpUpstream", "open_openai_http"]

_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
_MAX_BACKOFF = 8.0


class OpenAIHttpUpstream:
    def __init__(self, response: httpx.Response, first_frames: list[str]) -> None:
        self.response = response
        self._pending: deque[str] = deque(first_frames)
        self._chunks: AsyncIterator[bytes] | None = None if first_frames else response.aiter_bytes()
        self._decoder = SseDecoder()

    async def send(self, frame: dict[str, Any]) -> None:  # the request body was the prompt
        return None

    async def recv(self) -> str:
        while not self._pending:
            if self._chunks is None:
                raise UpstreamEnded
            with map_upstream_errors("receive"):
                try:
                    data = await anext(self._chunks)
                except StopAsyncIteration:
                    self._chunks = None
                    tail = self._decoder.flush()  # a last event without its blank line
                    if tail is not None:
                        self._pending.append(tail.data)
                    continue
            self._pending.extend(event.data for event in self._decoder.decode_bytes(data))
        return self._pending.popleft()

    def buffered(self) -> bool:
        return bool(self._pending)

    async def gather(self, seconds: float) -> None:
        # httpx reads only when asked: not calling recv() is all the gathering needed.
        await asyncio.sleep(seconds)

    async def aclose(self, *, abort_frame: dict[str, Any] | None = None) -> None:
        with contextlib.suppress(Exception):
            await self.response.aclose()


def _retry_after(response: httpx.Response, attempt: int) -> float:
    header = response.headers.get("retry-after")
    if header:
        with contextlib.suppress(ValueError):
            return min(float(header), _MAX_BACKOFF)
    return min(0.5 * 2**attempt, _MAX_BACKOFF)


async def open_openai_http(
    client: httpx.AsyncClient,
    base_url: str,
    body: dict[str, Any],
    *,
    api_key: str | None,
    max_retries: int,
    connect_timeout: float,
) -> OpenAIHttpUpstream:
    url = base_url.rstrip("/") + "/v1/chat/completions"
    headers = {"content-type": "application/json", "accept": "text/event-stream"}
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    content = orjson.dumps(body)
    attempt = 0
    while True:
        with map_upstream_errors("connect"):
            request = client.build_request(
                "POST",
                url,
                content=content,
                headers=headers,
                timeout=httpx.Timeout(connect_timeout, read=None),
            )
            response = await client.send(request, stream=True)
        if response.status_code < 300:
            return OpenAIHttpUpstream(response, [])
        if response.status_code in _RETRY_STATUSES and attempt < max_retries:
            delay = _retry_after(response, attempt)
            await response.aclose()
            attempt += 1
            await asyncio.sleep(delay)
            continue
        body_bytes = await response.aread()
        await response.aclose()
        if response.status_code in (401, 403):
            raise UpstreamAuthRejected(502, detail=f"provider answered {response.status_code}")
        if response.status_code in _RETRY_STATUSES:
            raise UpstreamUnavailable(
                detail=f"provider answered {response.status_code} after {attempt} retries"
            )
        error = _error_frame(body_bytes, response.status_code)
        return OpenAIHttpUpstream(response, [error])


def _error_frame(body: bytes, status: int) -> str:
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError:
        parsed = None
    if isinstance(parsed, dict) and "error" in parsed:
        return orjson.dumps({"error": parsed["error"]}).decode()
    message = f"The model provider refused the request ({status})."
    return orjson.dumps({"error": {"message": message}}).decode()
