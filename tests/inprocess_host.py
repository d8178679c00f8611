"""A host app that answers useChat with its own SDK stream (``UIStreamResponse`` over the real
``openai`` SDK) and mounts its gateway beside it — in the test's loop (:func:`host`), or as a
process of its own, an instance among several on one redis-server:

    python -m tests.inprocess_host --port P --model URL --redis-url URL --busy queue
"""

from __future__ import annotations

import argparse
from typing import Any

import uvicorn
from openai import AsyncOpenAI
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route

from chunkbridge import (
    Gateway,
    GatewayConfig,
    UIStreamResponse,
    create_app,
    parse_chat_request,
    request_body,
)
from chunkbridge.protocol_specs.chat_request import ChatRequest

#: The model's settings, the app's and the gateway's.
SETTINGS = {"model": "m"}


def host(gateway: Gateway, client: AsyncOpenAI) -> Starlette:
    """The app: ``POST /ai/{session}/chat`` answers with the SDK's stream, given as a callable
    (``?events=callable``, the default), a callable taking the request (``request``), or
    live: the request sent before the response is built (``live``); the gateway at ``/gw``."""

    def opens(chat: ChatRequest) -> Any:
        body = request_body(chat, dialect="openai-chat", settings=SETTINGS)
        return client.chat.completions.create(**body)

    async def chat(request: Request) -> Response:
        chat = parse_chat_request(await request.body(), gateway=gateway)
        how = request.query_params.get("events", "callable")
        events: Any = opens  # given the request as the turn answers it
        if how == "callable":
            events = lambda: opens(chat)  # noqa: E731 (what an app writes)
        elif how == "live":
            events = await opens(chat)
        return UIStreamResponse(
            events,
            dialect="openai-chat",
            gateway=gateway,
            request=chat,
            session_id=request.path_params["session"],
            headers={"x-host": "app"},
        )

    return Starlette(
        routes=[
            Route("/ai/{session}/chat", chat, methods=["POST"]),
            Mount("/gw", create_app(gateway)),
        ],
        lifespan=lambda app: gateway.lifespan(),
    )


def gateway_for(model: str, **settings: Any) -> Gateway:
    """The host's gateway: ``openai-chat`` in front of ``model`` (its own POSTs' upstream)."""
    return Gateway(
        GatewayConfig(
            dialect="openai-chat",
            upstream=model,
            dialect_settings={"openai-chat": {**SETTINGS, "api_key": "sk-test"}},
            **settings,
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--redis-url", required=True)
    parser.add_argument("--busy", default="queue")
    flags = parser.parse_args()
    gateway = gateway_for(
        flags.model,
        busy=flags.busy,
        resume="redis",
        redis_url=flags.redis_url,
        owner_lease=2.0,
        keepalive_interval=0.5,
        log_level="warning",
    )
    client = AsyncOpenAI(base_url=f"{flags.model}/v1", api_key="sk-test", max_retries=0)
    app = host(gateway, client)
    uvicorn.run(app, host="127.0.0.1", port=flags.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
