"""The gateway's errors, one tree. Each carries ``status_hint`` (the HTTP status while no byte of
the response has gone out) and ``client_message`` (short text the AI SDK shows the user as is).

::

    GatewayError
    ├── RequestError                  the client's request cannot be served
    │   ├── BadRequest                400  bad session id, JSON or body shape
    │   ├── UnsupportedMediaType      415  not application/json (also a CSRF gate)
    │   ├── PayloadTooLarge           413
    │   ├── Unauthorized              401
    │   ├── Forbidden                 403
    │   └── TurnInProgress            409  the session already has an active turn
    └── UpstreamError                 the upstream failed (remote blame)
        ├── UpstreamUnavailable       502  refused, unreachable, handshake rejected
        ├── UpstreamTimeout           504  no handshake in time
        ├── UpstreamAuthRejected      401/403  the upstream refused the forwarded credentials
        └── UpstreamClosed            the connection ended while streaming (an error chunk)

Foreign exceptions (``OSError``, ``websockets`` and ``httpx`` errors) are mapped to these only at
the transport boundary (:func:`gateway.transports.base.map_upstream_errors`). An unexpected
exception never reaches the client as text: it gets a generic message, the detail goes to the log.
"""

from __future__ import annotations

__all__ = [
    "BadRequest",
    "Forbidden",
    "GatewayError",
    "PayloadTooLarge",
    "RequestError",
    "TurnInProgress",
    "Unauthorized",
    "UnsupportedMediaType",
    "UpstreamAuthRejected",
    "UpstreamClosed",
    "UpstreamError",
    "UpstreamTimeout",
    "UpstreamUnavailable",
]


class GatewayError(Exception):
    status_hint = 500
    client_message = "The gateway failed."

    def __init__(self, client_message: str | None = None, *, detail: str | None = None) -> None:
        if client_message is not None:
            self.client_message = client_message
        #: Log-only detail (never sent to the client).
        self.detail = detail
        super().__init__(
            self.client_message if detail is None else f"{self.client_message} ({detail})"
        )


class RequestError(GatewayError):
    status_hint = 400


class BadRequest(RequestError):
    status_hint = 400
    client_message = "The request is not a valid chat request."


class UnsupportedMediaType(RequestError):
    status_hint = 415
    client_message = "The request must have content-type application/json."


class PayloadTooLarge(RequestError):
    status_hint = 413
    client_message = "The request body is too large."


class Unauthorized(RequestError):
    status_hint = 401
    client_message = "Sign in to continue."


class Forbidden(RequestError):
    status_hint = 403
    client_message = "You do not have access to this session."


class TurnInProgress(RequestError):
    status_hint = 409
    client_message = "This session is already answering; wait for it or stop it first."


class UpstreamError(GatewayError):
    status_hint = 502
    client_message = "The agent is unavailable right now."


class UpstreamUnavailable(UpstreamError):
    status_hint = 502


class UpstreamTimeout(UpstreamError):
    status_hint = 504
    client_message = "The agent did not answer in time."


class UpstreamAuthRejected(UpstreamError):
    def __init__(self, status: int, *, detail: str | None = None) -> None:
        self.status_hint = 403 if status == 403 else 401
        message = Forbidden.client_message if status == 403 else Unauthorized.client_message
        super().__init__(message, detail=detail)


class UpstreamClosed(UpstreamError):
    client_message = "The connection to the agent was lost."
