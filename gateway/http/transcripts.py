"""The stored chats over HTTP (``store = sqlite | postgres``), with the chat route's session and
auth rules (a JWT's sessions claim keeps users apart):

* ``GET /api/sessions/{id}/chat/{chat id}/messages``: the chat's ``UIMessage[]`` for
  ``useChat({ messages })`` (``[]`` for a chat never stored). An answer whose turn still runs
  is left out: the client's ``resume`` replays it whole.
* ``GET /api/sessions/{id}/chats?limit=&cursor=``: the session's chats, newest first — id,
  title (the start of the first user message), times, message count — and the next page's
  cursor.
* ``DELETE /api/sessions/{id}/chat/{chat id}``: forget a chat (204; 404 when there is none).

A stored message made for a newer AI SDK major than the configured ``target`` loses the parts
the target's client does not know (the stream is gated the same way); a row that does not load
is skipped and reported, never a 500 for the chat.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from chunkbridge.gateway.errors import BadRequest, NotFound, StoreDown
from chunkbridge.gateway.http.intake import authorized_session, refusal, rejected
from chunkbridge.gateway.service import Gateway
from chunkbridge.gateway.stores import StoreUnavailable, TranscriptStore
from chunkbridge.gateway.turn.history import shown

__all__ = ["chat_list", "chat_messages", "delete_chat", "for_target"]

#: Part types a client of each major does not know (ai 7's additions).
_NEWER_PARTS = {5: {"custom", "reasoning-file", "steering-message"}}
_NEWER_PARTS[6] = _NEWER_PARTS[5]
_JSON = "application/json"
_MAX_PAGE = 100


def for_target(message: dict[str, Any], made_for: int, target: int) -> dict[str, Any]:
    """``message`` as the ``target`` major's client may hold it."""
    unknown = _NEWER_PARTS.get(target)
    if made_for <= target or not unknown:
        return message
    return {**message, "parts": [p for p in message["parts"] if p.get("type") not in unknown]}


def _store(request: Request) -> tuple[Gateway, TranscriptStore, str]:
    gateway: Gateway = request.app.state.gateway
    session_id = authorized_session(gateway.config, request)
    store = gateway.stores.transcripts
    if store is None:
        raise NotFound("Chats are not stored (store = off).")
    return gateway, store, session_id


async def _answer(
    request: Request, work: Callable[[Request, Any], Awaitable[Response]]
) -> Response:
    started = time.monotonic()
    gateway: Gateway = request.app.state.gateway
    log = gateway.log.bind(session_id=request.path_params["session_id"][:128])
    try:
        return await work(request, log)
    except StoreUnavailable as exc:
        return refusal(rejected(gateway.metrics, log, StoreDown(detail=str(exc)), started))
    except Exception as exc:
        return refusal(rejected(gateway.metrics, log, exc, started))


async def _messages(request: Request, log: Any) -> Response:
    gateway, store, session_id = _store(request)
    chat_id = request.path_params["chat_id"]
    transcript = await store.load((session_id, chat_id))
    target = gateway.config.target
    messages = [
        for_target(m.message, m.major, target) for m in transcript.messages if shown(m.message)
    ]
    log.info(
        "transcript.load", chat_id=chat_id[:128], loaded=len(messages), skipped=transcript.skipped
    )
    return Response(orjson.dumps(messages), media_type=_JSON)


async def _chats(request: Request, log: Any) -> Response:
    _, store, session_id = _store(request)
    try:
        limit = min(int(request.query_params.get("limit", "20")), _MAX_PAGE)
    except ValueError:
        raise BadRequest("limit must be a number.") from None
    if limit < 1:
        raise BadRequest("limit must be at least 1.")
    page = await store.chats(session_id, limit, request.query_params.get("cursor") or None)
    body = {
        "chats": [
            {
                "id": c.chat_id,
                "title": c.title,
                "createdAt": c.created_at,
                "updatedAt": c.updated_at,
                "messages": c.messages,
            }
            for c in page.chats
        ],
        "next": page.next,
    }
    return Response(orjson.dumps(body), media_type=_JSON)


async def _delete(request: Request, log: Any) -> Response:
    _, store, session_id = _store(request)
    chat_id = request.path_params["chat_id"]
    if not await store.delete((session_id, chat_id)):
        raise NotFound("No such chat.")
    log.info("transcript.deleted", chat_id=chat_id[:128])
    return Response(status_code=204)


async def chat_messages(request: Request) -> Response:
    return await _answer(request, _messages)


async def chat_list(request: Request) -> Response:
    return await _answer(request, _chats)


async def delete_chat(request: Request) -> Response:
    return await _answer(request, _delete)
