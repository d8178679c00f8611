"""A bare HTTP/1.1 client over asyncio streams, for what httpx hides: when exactly the next
request goes out after the last byte of a response, a client that writes its whole body before
reading, a connection reset instead of an answer."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

__all__ = ["RawResponse", "read_response", "request_head"]


@dataclass
class RawResponse:
    status: int
    headers: dict[str, str]
    body: bytes


def request_head(
    path: str,
    *,
    length: int | None,
    content_type: str = "application/json",
    extra: dict[str, str] | None = None,
) -> bytes:
    """A POST's head; ``length=None`` announces a chunked body."""
    lines = [f"POST {path} HTTP/1.1", "host: 127.0.0.1", f"content-type: {content_type}"]
    lines.append("transfer-encoding: chunked" if length is None else f"content-length: {length}")
    lines += [f"{k}: {v}" for k, v in (extra or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def read_response(reader: asyncio.StreamReader) -> RawResponse:
    """One response: its head, then its body by content-length or chunked framing (or, with
    neither, until the connection closes)."""
    head = await reader.readuntil(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    status = int(status_line.split(" ", 2)[1])
    headers: dict[str, str] = {}
    for line in header_lines:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    if "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        parts = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            parts.append(await reader.readexactly(size + 2))
            if size == 0:
                break
        body = b"".join(p[:-2] for p in parts)
    else:
        body = await reader.read()
    return RawResponse(status, headers, body)
