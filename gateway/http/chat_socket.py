"""The AI SDK 7 ``WebSocketChatTransport`` endpoint: ``/api/sessions/{session_id}/chat/ws``.

Spec §7. One socket carries several requests, multiplexed by ``requestId``: ``send`` starts a
turn exactly as the POST does (same checks, same turn, same chunk log when resume is on),
``resume`` replays a response from its first chunk and follows it (``no-active`` when nothing
runs), ``abort`` stops that request's turn. Out go ``chunk`` frames with a per-request
``sequence`` (0, 1, 2…), then ``end``, or ``error`` for a request the gateway refused.

The turn pipeline writes SSE bodies (``data: <chunk>\\n\\n`` events, the bytes the chunk log
keeps); each event becomes one frame by splicing its JSON into the frame's, without parsing it
again. So a turn started over HTTP can be resumed here and the reverse.

Browsers cannot set handshake headers: the token may come as the ``Authorization`` header, the
``token`` query parameter, the ``chunkbridge_token`` cookie, or a ``bearer.<token>`` subprotocol
(which the handshake then selects). A socket that closes detaches its turns when resume is on,
and aborts them otherwise, as a dropped HTTP client does.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import orjson
from starlette.websockets import WebSocket, WebSocketDisconnect

from chunkbridge.gateway.errors import BadRequest, GatewayError
from chunkbridge.gateway.http.auth import authenticate
from chunkbridge.gateway.http.intake import (
    SESSION_ID,
    check_session,
    check_size,
    parse_chat_request,
    rejected,
)
from chunkbridge.gateway.http.sse import (
    LOST_PLACE_TEXT,
    QUEUE_TIMEOUT_TEXT,
    error_ending_chunks,
    queue_chunk,
)
from chunkbridge.gateway.service import Gateway
from chunkbridge.gateway.stores import StoreUnavailable
from chunkbridge.gateway.stores.base import Key
from chunkbridge.gateway.stores.line import Joined
from chunkbridge.gateway.turn.busy import Queued
from chunkbridge.gateway.turn.run import Seat, TurnRun
from chunkbridge.gateway.turn.steering import follow
from chunkbridge.translators.core.sse_codec import DONE_FRAME, encode_chunk, encode_chunks

__all__ = ["chat_socket"]

_SUBPROTOCOL = "bearer."
_DONE = DONE_FRAME[len(b"data: ") : -2]


def _token(websocket: WebSocket) -> tuple[str | None, str | None]:
    """(the Authorization header value, the subprotocol to select) from wherever the browser
    could put the token."""
    header = websocket.headers.get("authorization")
    if header:
        return header, None
    token = websocket.query_params.get("token") or websocket.cookies.get("chunkbridge_token")
    if token:
        return f"Bearer {token}", None
    for protocol in websocket.scope.get("subprotocols", []):
        if protocol.startswith(_SUBPROTOCOL):
            return f"Bearer {protocol[len(_SUBPROTOCOL) :]}", protocol
    return None, None


class _Request:
    """One multiplexed request: its frames' sequence numbers and its task."""

    __slots__ = ("request_id", "sequence", "task", "run", "following")

    def __init__(self, request_id: str) -> None:
        self.request_id = request_id
        #: A steered request's chat: its answer runs on the turn that took it (an ``abort``
        #: stops that turn, on whichever instance runs it).
        self.following: Key | None = None
        self.sequence = 0
        self.task: asyncio.Task[None] | None = None
        self.run: TurnRun | None = None


class _Connection:
    def __init__(
        self, websocket: WebSocket, gateway: Gateway, session_id: str, forward: dict[str, str]
    ) -> None:
        self.websocket = websocket
        self.gateway = gateway
        self.session_id = session_id
        self.forward = forward
        self.requests: dict[str, _Request] = {}
        #: Stops sent for steered requests' aborts (strong references until they are done).
        self._stops: set[asyncio.Task[bool]] = set()
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._send_lock = asyncio.Lock()
        self.log = gateway.log.bind(session_id=session_id[:128], transport="websocket")

    async def send(self, frame: bytes) -> None:
        async with self._send_lock:  # frames of several requests interleave, never mix
            await self.websocket.send_text(frame.decode())

    def writer(self, request: _Request) -> Any:
        """A turn writer: each SSE event of a body as one ``chunk`` frame (``[DONE]`` left to
        the caller, which sends ``end``)."""
        head = b'{"type":"chunk","requestId":' + orjson.dumps(request.request_id) + b',"sequence":'

        async def write(body: bytes) -> None:
            for event in body.split(b"\n\n"):
                if not event.startswith(b"data: "):
                    continue  # keep-alive comments, the stream-open comment
                payload = event[6:]
                if payload == _DONE:
                    continue
                frame = head + str(request.sequence).encode() + b',"chunk":' + payload + b"}"
                request.sequence += 1
                await self.send(frame)

        return write

    async def control(self, kind: str, request_id: str, **fields: Any) -> None:
        await self.send(orjson.dumps({"type": kind, "requestId": request_id, **fields}))

    # -- the frames ------------------------------------------------------------------------------

    async def run(self) -> None:
        try:
            while True:
                text = await self.websocket.receive_text()
                try:
                    frame = orjson.loads(text)
                except orjson.JSONDecodeError:
                    await self.websocket.close(1003, "frames are JSON objects")
                    return
                if not isinstance(frame, dict) or not isinstance(frame.get("requestId"), str):
                    await self.websocket.close(1003, "a frame needs a string requestId")
                    return
                kind, request_id = frame.get("type"), frame["requestId"]
                if kind == "abort":
                    self.abort(request_id)
                elif kind == "send" and request_id not in self.requests:
                    request = self.requests[request_id] = _Request(request_id)
                    size = len(text) if text.isascii() else len(text.encode())  # bytes
                    request.task = asyncio.create_task(self.start(request, frame, size))
                elif kind == "resume" and request_id not in self.requests:
                    request = self.requests[request_id] = _Request(request_id)
                    request.task = asyncio.create_task(self.resume(request, frame))
                else:
                    await self.control("error", request_id, errorText=f"Unexpected {kind!r} frame.")
        except WebSocketDisconnect:
            pass
        finally:
            self.closed.set_result(None)
            tasks = [r.task for r in self.requests.values() if r.task is not None]
            with contextlib.suppress(Exception):
                await asyncio.gather(*tasks, return_exceptions=True)

    def abort(self, request_id: str) -> None:
        request = self.requests.get(request_id)
        if request is not None and request.run is not None:
            request.run.stop()  # the turn ends as a client abort would
        elif request is not None and request.following is not None:
            self._stop_elsewhere(request.following)
            if request.task is not None:
                request.task.cancel()
        elif request is not None and request.task is not None:
            request.task.cancel()  # a resume: stop following

    async def start(self, request: _Request, frame: dict[str, Any], size: int) -> None:
        """A ``send``: the POST's intake (:mod:`chunkbridge.gateway.http.intake`: the same checks,
        messages,
        metrics and log lines), then the same turn."""
        gateway = self.gateway
        started = time.monotonic()
        log = self.log.bind(request_id=request.request_id, dialect=gateway.dialect.name)
        try:
            check_session(gateway.draining, self.session_id)
            check_size(size, gateway.config.max_body_bytes)
            given = frame.get("body")
            body: dict[str, Any] = given if isinstance(given, dict) else {}
            raw = {
                **body,
                "id": frame.get("id", ""),
                "messages": frame.get("messages"),
                "trigger": frame.get("trigger", "submit-message"),
            }
            if frame.get("messageId") is not None:
                raw["messageId"] = frame["messageId"]
            chat_request = parse_chat_request(raw, gateway.config.max_messages)
            place = await gateway.line_up(
                chat_request, self.session_id, request_id=request.request_id
            )
            waited = isinstance(place, Queued)
            if isinstance(place, Queued):  # it waits for the session's turn (busy)
                await self.control("start", request.request_id)
                opened = await self.wait_in_line(request, place, chat_request, started, log)
                if opened is None:
                    return
                run = opened
            else:
                run = await gateway.open_turn(
                    chat_request, self.session_id, self.forward, request.request_id, started,
                    log, seat=place,
                )  # fmt: skip
        except Exception as exc:
            error = rejected(gateway.metrics, log, exc, started, transport="websocket")
            with contextlib.suppress(Exception):
                await self.control("error", request.request_id, errorText=error.client_message)
            return
        request.run = run
        try:
            if not waited:
                await self.control("start", request.request_id)
            # shielded: the race cancels what it waited on, and the socket's close is shared
            if await run.deliver(self.writer(request), asyncio.shield(self.closed)):
                await self.control("end", request.request_id)
        except Exception:  # the socket went away while writing
            run.client_disconnected = True
        finally:
            request.run = None
            await run.end()

    async def wait_in_line(
        self, request: _Request, queued: Queued, chat_request: Any, started: float, log: Any
    ) -> TurnRun | None:
        """A request waiting for its session's turn, as the POST's waits
        (:class:`~chunkbridge.gateway.http.sse.QueuedResponse`): ``start`` and its position as
        chunks, then its turn — or ``None`` when it ended first (its ending written: an
        ``error`` chunk and ``end``; nothing when the socket went away or it was aborted)."""
        write = self.writer(request)
        log.info("busy.queued", position=queued.position, kind=queued.waiter.kind.value)
        seat = None
        try:
            await write(encode_chunk({"type": "start", "messageId": queued.message_id}))

            async def say(position: int) -> None:
                await write(encode_chunk(queue_chunk(position)))

            async def keepalive() -> None:
                pass  # (the socket has its own pings)

            waiting = queued.wait(say, keepalive)
            place = await _until_closed(waiting, self.closed)
            seat = place if isinstance(place, Seat) else None
            if isinstance(place, Joined):  # the running turn took it as a steer
                await say(0)
                text = await self.follow_steered(request, queued)
            elif seat is None:
                text = QUEUE_TIMEOUT_TEXT if not self.closed.done() else ""
            else:
                await say(0)
                opened = await self.gateway.open_queued(
                    queued, seat, chat_request, self.forward, request.request_id, started, log
                )
                seat = None  # (the run holds it now)
                return opened
        except (StoreUnavailable, GatewayError) as exc:
            log.warning("busy.ended", error=type(exc).__name__, detail=str(exc)[:200])
            text = LOST_PLACE_TEXT if isinstance(exc, StoreUnavailable) else exc.client_message
        except Exception as exc:  # a bug of ours, or the socket gone while writing
            log.error("busy.open_failed", exc_info=exc)
            text = GatewayError.client_message
        finally:
            await queued.leave()
            if seat is not None:
                await seat.free()
        if text and not self.closed.done():
            with contextlib.suppress(Exception):
                await write(encode_chunks(error_ending_chunks(text)))
                await self.control("end", request.request_id)
        return None

    def _stop_elsewhere(self, key: Key) -> None:
        resume = self.gateway.stores.resume
        if resume is not None:
            task = asyncio.get_running_loop().create_task(resume.stop(key))
            self._stops.add(task)
            task.add_done_callback(self._stops.discard)

    async def follow_steered(self, request: _Request, queued: Queued) -> str:
        """A request the running turn took as a steer: its answer from the chat's chunk log
        (:func:`~chunkbridge.gateway.turn.steering.follow`), then ``end``; the error text when
        it is not found. It leaves the line once it found the answer."""
        bodies = await follow(self.gateway.stores.resume, queued.key, queued.message_id)
        if bodies is None:
            return LOST_PLACE_TEXT
        await queued.leave()
        request.following = queued.key
        write = self.writer(request)
        try:
            async for body in bodies:
                if self.closed.done():
                    return ""
                await write(body)
        except Exception as exc:  # the store failed mid-way, or the socket went away
            self.log.warning("busy.follow_ended", error=type(exc).__name__)
            return ""
        finally:
            request.following = None
        await self.control("end", request.request_id)
        return ""

    async def resume(self, request: _Request, frame: dict[str, Any]) -> None:
        gateway = self.gateway
        chat_id = frame.get("id")
        with contextlib.suppress(Exception):
            bodies = None
            resume = gateway.stores.resume
            if resume is not None and isinstance(chat_id, str):
                bodies = await resume.reader((self.session_id, chat_id))
            if bodies is None:
                await self.control("no-active", request.request_id)
                return
            await self.control("start", request.request_id)
            write = self.writer(request)  # from sequence 0: the client drops what it has
            async for body in bodies:
                await write(body)
            await self.control("end", request.request_id)


async def _until_closed(waiting: Any, closed: asyncio.Future[None]) -> Seat | Joined | None:
    """``waiting``'s place, or ``None`` when the socket closes first."""
    task = asyncio.ensure_future(waiting)
    done, _ = await asyncio.wait(
        {task, asyncio.shield(closed)}, return_when=asyncio.FIRST_COMPLETED
    )
    if task in done:
        result: Seat | Joined | None = task.result()
        return result
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task
    return None


async def chat_socket(websocket: WebSocket) -> None:
    gateway: Gateway = websocket.app.state.gateway
    session_id = websocket.path_params["session_id"]
    authorization, subprotocol = _token(websocket)
    try:
        if not SESSION_ID.fullmatch(session_id):
            raise BadRequest("The session id is not valid.")
        forward = authenticate(gateway.config, authorization, session_id)
    except GatewayError as exc:
        gateway.log.info("socket.rejected", error=type(exc).__name__, status=exc.status_hint)
        await websocket.close(1008, exc.client_message[:120])
        return
    await websocket.accept(subprotocol=subprotocol)
    await _Connection(websocket, gateway, session_id, forward).run()
