"""Upstream transports: the only modules that touch upstream sockets.

``chunkbridge.gateway.transports.http_sse`` (h11) is imported only by deployments with an HTTP
upstream.
"""

from chunkbridge.gateway.transports.base import Upstream, UpstreamEnded, map_upstream_errors
from chunkbridge.gateway.transports.websocket import open_websocket

__all__ = ["Upstream", "UpstreamEnded", "map_upstream_errors", "open_websocket"]
