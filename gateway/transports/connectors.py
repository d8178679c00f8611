"""Opening a turn upstream, as the dialect describes it and the upstream URL's scheme chooses.

A :class:`Connector` is made once per app from the configured dialect's contract: ``ws://`` and
``wss://`` URLs use its :class:`~chunkbridge.kit.WebSocketContract`, ``http://`` and ``https://``
its :class:`~chunkbridge.kit.HttpSseContract`. ``open`` builds the turn's frames or request (pure
functions of the dialect), connects, sends, and hands back the
:class:`~chunkbridge.gateway.transports. Upstream`; everything that can fail here fails before the
response starts, as an HTTP error.
"""

from __future__ import annotations

from typing import Protocol
from urllib.parse import quote, urlsplit

from chunkbridge.gateway.config import ConfigError, GatewayConfig
from chunkbridge.gateway.errors import UpstreamAuthRejected
from chunkbridge.gateway.transports.base import Upstream
from chunkbridge.gateway.transports.websocket import open_websocket
from chunkbridge.kit import (
    Dialect,
    FrameTemplates,
    HttpSseContract,
    TurnInput,
    WebSocketContract,
    build_frames,
)

__all__ = ["Connector", "HttpSseConnector", "WebSocketConnector", "connector_for"]


class Connector(Protocol):
    async def open(self, turn: TurnInput, forward: dict[str, str]) -> Upstream:
        """Start ``turn`` upstream, passing on the client's ``forward`` headers. Raises
        :class:`~chunkbridge.kit.RequestRejected` or a
        :class:`~chunkbridge.gateway.errors.GatewayError`."""

    async def aclose(self) -> None:
        """Release shared resources (connection pools)."""


def _url(template: str, session_id: str) -> str:
    return template.replace("{session_id}", quote(session_id, safe=""))


def _sends_client_credentials(forward: dict[str, str], own: dict[str, str] | None = None) -> bool:
    """Whether the upstream sees the client's ``Authorization`` (not one of the dialect's)."""
    forwarded = any(k.lower() == "authorization" for k in forward)
    overridden = own is not None and any(k.lower() == "authorization" for k in own)
    return forwarded and not overridden


class WebSocketConnector:
    def __init__(
        self, url: str, contract: WebSocketContract, templates: FrameTemplates, timeout: float
    ) -> None:
        self.url = url
        self.contract = contract
        self.templates = templates
        self.timeout = timeout

    async def open(self, turn: TurnInput, forward: dict[str, str]) -> Upstream:
        frames = build_frames(self.contract, turn, self.templates)
        try:
            upstream = await open_websocket(
                _url(self.url, turn.session_id),
                headers=forward,
                connect_timeout=self.timeout,
                abort_frame=frames.abort,
            )
        except UpstreamAuthRejected as exc:
            exc.blame_client(_sends_client_credentials(forward))
            raise
        try:
            for frame in frames.prompts:  # the prompt, or one frame per answer
                await upstream.send(frame)
        except BaseException:
            await upstream.aclose()
            raise
        return upstream

    async def aclose(self) -> None:
        pass


class HttpSseConnector:
    def __init__(self, url: str, contract: HttpSseContract, config: GatewayConfig) -> None:
        from chunkbridge.gateway.transports.http_pool import HttpConnectionPool
        from chunkbridge.gateway.transports.tls import client_tls

        self.url = url
        self.contract = contract
        self.config = config
        self.pool = HttpConnectionPool(client_tls(config), config.max_event_bytes)

    async def open(self, turn: TurnInput, forward: dict[str, str]) -> Upstream:
        from chunkbridge.gateway.transports.http_sse import open_http_sse

        request = self.contract.request(turn)
        url = _url(self.url, turn.session_id).rstrip("/") + request.path
        config = self.config
        try:
            return await open_http_sse(
                self.pool,
                url,
                request,
                self.contract,
                headers=forward,
                retries=config.upstream_retries,
                connect_timeout=config.connect_timeout,
                first_byte_timeout=config.first_event_timeout,
            )
        except UpstreamAuthRejected as exc:
            exc.blame_client(_sends_client_credentials(forward, request.headers))
            raise

    async def aclose(self) -> None:
        await self.pool.aclose()


def connector_for(dialect: Dialect, config: GatewayConfig) -> Connector:
    """The connector for this dialect and upstream URL; :class:`ConfigError` when the dialect
    does not speak the URL's transport."""
    contract = dialect.in_process
    if contract is not None and dialect.in_process_only:
        raise ConfigError(
            f"dialect {dialect.name!r} is in-process only: its events are "
            f"{contract.events}, which your own Python app streams "
            f"(pip install 'chunkbridge[{contract.extra}]'); it cannot front an upstream URL"
        )
    scheme = urlsplit(config.upstream).scheme
    if scheme in ("ws", "wss"):
        if dialect.websocket is None:
            raise ConfigError(
                f"dialect {dialect.name!r} has no WebSocket upstream: use an "
                f"{' or '.join(s + '://' for s in dialect.transports)} upstream URL"
            )
        templates = FrameTemplates(
            config.prompt_frame,
            config.regenerate_frame,
            config.abort_frame,
            config.answer_frame,
            config.approval_frame,
        )
        return WebSocketConnector(
            config.upstream, dialect.websocket, templates, config.connect_timeout
        )
    if dialect.http is None:
        raise ConfigError(
            f"dialect {dialect.name!r} has no HTTP upstream: use a "
            f"{' or '.join(s + '://' for s in dialect.transports)} upstream URL"
        )
    return HttpSseConnector(config.upstream, dialect.http, config)
