"""chunkbridge: agent backends and model providers in, Vercel AI SDK UI message streams out.

The public API, for an app that serves ``useChat`` (AI SDK 5, 6, 7) from Python::

    from chunkbridge import GatewayConfig, Gateway, create_app, ui_stream, UIStreamResponse

* :class:`GatewayConfig`, :class:`Gateway`, :func:`create_app` — the gateway in front of an
  upstream (an agent backend's WebSocket, a model provider's HTTP API), served on its own or
  mounted in the app; ``async with gateway.lifespan():`` runs its stores, tool servers and
  telemetry inside the app's lifespan.
* :class:`UIStreamResponse`, :func:`ui_stream` — a useChat answer from the app's own events (an
  SDK's stream, an agent's events, its own async generator), through the same pipeline.
* :func:`parse_chat_request`, :class:`ChatRequest`, :func:`request_body` — the request side:
  the client's body validated as the gateway does, and the conversation as a provider wants it.
* :class:`ConfigError`, :class:`GatewayError`, :class:`RequestError` — what they raise.

These names load on first use: ``import chunkbridge`` (or a dialect package's
``import chunkbridge.kit``) imports no web framework, and never an optional SDK (``openai``,
``anthropic``, ``pydantic_ai``…).

One import name, four parts (each a top-level folder of the repository, mapped here by
``pyproject.toml``'s package directories):

* :mod:`chunkbridge.kit` — the public dialect API (``translators/kit/``): what a dialect,
  built-in or third-party, imports to describe and translate its upstream;
* :mod:`chunkbridge.translators` — the sans-I/O stream core and the built-in dialects;
* :mod:`chunkbridge.protocol_specs` — the wire vocabularies, as types and tables;
* :mod:`chunkbridge.gateway` — the I/O shell: HTTP and WebSocket serving, upstream transports,
  resume stores, the command line, and the in-process streams.
"""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

try:
    __version__ = version("chunkbridge")
except PackageNotFoundError:  # pragma: no cover - running from a tree that is not installed
    __version__ = "0+unknown"

if TYPE_CHECKING:
    from chunkbridge.gateway.app_streams import (
        UIStreamResponse,
        parse_chat_request,
        request_body,
        ui_stream,
    )
    from chunkbridge.gateway.config import ConfigError, GatewayConfig
    from chunkbridge.gateway.errors import GatewayError, RequestError
    from chunkbridge.gateway.http.app import create_app
    from chunkbridge.gateway.service import Gateway
    from chunkbridge.protocol_specs.chat_request import ChatRequest

#: Public name → the module that defines it (imported on first use).
_EXPORTS = {
    "ChatRequest": "chunkbridge.protocol_specs.chat_request",
    "ConfigError": "chunkbridge.gateway.config",
    "Gateway": "chunkbridge.gateway.service",
    "GatewayConfig": "chunkbridge.gateway.config",
    "GatewayError": "chunkbridge.gateway.errors",
    "RequestError": "chunkbridge.gateway.errors",
    "UIStreamResponse": "chunkbridge.gateway.app_streams",
    "create_app": "chunkbridge.gateway.http.app",
    "parse_chat_request": "chunkbridge.gateway.app_streams",
    "request_body": "chunkbridge.gateway.app_streams",
    "ui_stream": "chunkbridge.gateway.app_streams",
}

__all__ = [
    "ChatRequest",
    "ConfigError",
    "Gateway",
    "GatewayConfig",
    "GatewayError",
    "RequestError",
    "UIStreamResponse",
    "__version__",
    "create_app",
    "parse_chat_request",
    "request_body",
    "ui_stream",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'chunkbridge' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # the next access is a plain lookup
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
