"""The transport seam (httpx's ``AsyncBaseTransport`` idea): one protocol, thin implementations.

An :class:`Upstream` is an open connection to one upstream turn, its prompt already sent: ``recv``
the frames it sends (raw text) until :class:`UpstreamEnded`, ask whether more are ``buffered`` (so
the turn driver can coalesce without waiting), let a burst ``gather``, ``wake`` a waiting ``recv``
(the driver's timer does, when a deadline is due), ``aclose`` it — with the dialect's abort frame
first when the turn is abandoned. Foreign errors become :mod:`chunkbridge.gateway.errors` classes
here and nowhere else (:func:`map_upstream_errors`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Protocol

import h11
import websockets.exceptions as wse

from chunkbridge.gateway.errors import (
    UpstreamAuthRejected,
    UpstreamClosed,
    UpstreamError,
    UpstreamTimeout,
    UpstreamUnavailable,
)

__all__ = ["Upstream", "UpstreamEnded", "map_upstream_errors"]


class UpstreamEnded(Exception):
    """The upstream closed normally: no more frames (not an error, an input to the turn)."""


class Upstream(Protocol):
    async def recv(self) -> str | bytes | None:
        """The next frame; ``None`` when :meth:`wake` interrupted the wait. Raises
        :class:`UpstreamEnded` at a normal end, an :class:`UpstreamError` else."""

    def buffered(self) -> bool:
        """Whether :meth:`recv` would return at once (a frame, or the end, is already here)."""

    def wake(self) -> None:
        """Make a ``recv`` that is waiting return ``None`` (no effect when none waits)."""

    async def gather(self, seconds: float) -> None:
        """Let frames accumulate for ``seconds`` without handling them as they come; then what
        arrived is buffered and taken in one go."""

    async def aclose(self, *, abort: bool = False) -> None:
        """Close; with ``abort``, first tell the upstream to stop the turn (the dialect's abort
        frame). Bounded in time; never raises."""


@contextlib.contextmanager
def map_upstream_errors(phase: str) -> Iterator[None]:
    """Map transport exceptions to :class:`UpstreamError` subclasses; ``phase`` goes to the log."""
    try:
        yield
    except UpstreamError:
        raise
    except TimeoutError as exc:
        raise UpstreamTimeout(detail=f"{phase}: timed out") from exc
    except wse.InvalidStatus as exc:
        status = exc.response.status_code
        if status in (401, 403):
            raise UpstreamAuthRejected(status, detail=f"{phase}: handshake {status}") from exc
        raise UpstreamUnavailable(detail=f"{phase}: handshake rejected with {status}") from exc
    except wse.ConnectionClosed as exc:
        raise UpstreamClosed(detail=f"{phase}: {exc}") from exc
    except (wse.InvalidHandshake, wse.InvalidURI) as exc:
        raise UpstreamUnavailable(detail=f"{phase}: {exc}") from exc
    except h11.ProtocolError as exc:  # a request h11 will not send, a response it cannot read
        raise UpstreamUnavailable(detail=f"{phase}: HTTP protocol error: {exc}") from exc
    except OSError as exc:  # TLS failures included (ssl.SSLError is an OSError)
        raise UpstreamUnavailable(detail=f"{phase}: {exc.strerror or exc}") from exc
