"""structlog set-up: one ``stream.end`` line per turn, context bound once, tokens never logged.

Configured once by the CLI (:func:`configure_logging`). JSON lines (orjson) in production,
console rendering for the demo. :func:`redact` is the one place that keeps credentials and
message contents out of the logs.
"""

from __future__ import annotations

import logging
import os
import sys
from functools import lru_cache
from typing import Any

import orjson
import structlog

__all__ = ["configure_logging", "get_logger", "redact"]

#: Keys whose values are message contents.
_CONTENT_KEYS = frozenset({"content", "text", "messages", "delta", "prompt"})
#: Parts of key names that hold credentials (``api_key``, ``x_api_key``, ``jwt_key``…).
_SECRET_PARTS = (
    "authorization",
    "token",
    "api_key",
    "apikey",
    "jwt",
    "cookie",
    "password",
    "secret",
)


@lru_cache(maxsize=1024)
def _hidden(key: object) -> bool:
    """Whether ``key``'s value stays out of the logs. Cached: a log line has a few dozen keys,
    nearly always the same ones, and one line is written for every turn."""
    if not isinstance(key, str):  # a nested dict's keys may be anything hashable
        return False
    key = key.lower()
    return key in _CONTENT_KEYS or any(part in key for part in _SECRET_PARTS)


def redact(_logger: Any, _method: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    """Replace credentials and message contents with ``"[redacted]"`` (top level and one deep)."""
    for key, value in event_dict.items():
        if _hidden(key):
            event_dict[key] = "[redacted]"
        elif isinstance(value, dict):
            event_dict[key] = {k: "[redacted]" if _hidden(k) else v for k, v in value.items()}
    return event_dict


def _process_id(pid: int) -> Any:
    """Adds ``pid``: with ``serve --workers N``, which process served a turn."""

    def add_pid(_logger: Any, _method: str, event_dict: dict[str, Any]) -> dict[str, Any]:
        event_dict["pid"] = pid
        return event_dict

    return add_pid


def configure_logging(level: str = "info", fmt: str = "json") -> None:
    numeric = logging.getLevelName(level.upper())
    processors: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        _process_id(os.getpid()),
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        redact,
    ]
    if fmt == "console":
        processors.append(structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty()))
        factory: Any = structlog.PrintLoggerFactory(sys.stderr)
    else:
        processors.append(structlog.processors.format_exc_info)
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
