"""Upstream transports: the only modules that touch upstream sockets."""

from gateway.transports.base import Upstream, UpstreamEnded, map_upstream_errors
from gateway.transports.openai_http import open_openai_http
from gateway.transports.websocket import open_websocket

__all__ = ["Upstream", "UpstreamEnded", "map_upstream_errors", "open_openai_http", "open_websocket"]
