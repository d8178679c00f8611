"""structlog set-up: one ``stream.end`` line per turn, context bound once, tokens never logged.

Configured once by the CLI (:func:`configure_logging`). JSON lines (orjson) in production,
console rendering for the demo. :func:`redact` is the one place that keeps credentials and
message contents out of the logs.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import orjson
import structlog

__all__ = ["configure_logging", "get_logger", "redact"]

_SECRET_KEYS = frozenset(
    {
        "authorization",
        "token",
        "access_token",
        "api_key",
        "openai_api_key",
        "jwt",
        "cookie",
        "password",
        "secret",
        "jwt_key",
        "content",
        "text",
        "messages",
        "delta",
        "prompt",
    }
)


def redact(_logger: Any, _method: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    """Replace credentials and message contents with ``"[redacted]"`` (top level and one deep)."""
    for key, value in event_dict.items():
        if key.lower() in _SECRET_KEYS:
            event_dict[key] = "[redacted]"
        elif isinstance(value, dict):
            event_dict[key] = {
                k: "[redacted]" if k.lower() in _SECRET_KEYS else v for k, v in value.items()
            }
    return event_dict


def configure_logging(level: str = "info", fmt: str = "json") -> None:
    numeric = logging.getLevelName(level.upper())
    processors: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        redact,
    ]
    if fmt == "console":
        processors.append(structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty()))
        factory: Any = structlog.PrintLoggerFactory(sys.stderr)
    else:
        processors.append(structlog.processors.JSONRenderer(serializer=orjson.dumps))
        factory = structlog.BytesLoggerFactory(sys.stderr.buffer)
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=factory,
        cache_logger_on_first_use=True,
    )


def get_logger(name: str = "chunkbridge") -> Any:
    return structlog.get_logger(name)
