"""chunkbridge inside an app's own process: a useChat answer from the app's own events.

Most Python teams run their model or agent in-process — an SDK's stream, an agent's events —
inside their FastAPI or Starlette app. :class:`UIStreamResponse` (and :func:`ui_stream` for
other frameworks) runs those events through everything a gateway turn goes through;
:func:`parse_chat_request` and :func:`request_body` are the request side. The gateway itself
is mounted in the same app (:func:`chunkbridge.create_app`) and lends these streams its stores
and telemetry.
"""

from chunkbridge.gateway.app_streams.requests import parse_chat_request, request_body
from chunkbridge.gateway.app_streams.response import UIStreamResponse, ui_stream

__all__ = ["UIStreamResponse", "parse_chat_request", "request_body", "ui_stream"]
