"""The gateway's errors, one tree. Each carries ``status_hint`` (the HTTP status while no byte of
the response has gone out) and ``client_message`` (short text the AI SDK shows the user as is).

::

    GatewayError
    ├── RequestError                  the client's request cannot be served
    │   ├── BadRequest                400  bad session id, JSON or body shape
    │   ├── UnsupportedMediaType      415  not application/json (also a CSRF gate)
    │   ├── PayloadTooLarge           413
    │   ├── Unauthorized              401  the client's own credentials are missing or wrong
    │   ├── Forbidden                 403
    │   ├── TurnInProgress            409  the session already has an active turn
    │   ├── QueueFull                 409  busy: queue_max messages wait already
    │   └── StaleTurn                 409  expectedTurnId is not the chat's newest answer
    ├── ServiceUnavailable            503  draining for a restart (with Retry-After)
    └── UpstreamError                 the upstream failed (remote blame)
        ├── UpstreamUnavailable       502  refused, unreachable, handshake rejected
        ├── UpstreamTimeout           504  no handshake in time (while streaming: a timeout)
        ├── UpstreamAuthRejected      401/403 when the upstream refused the client's forwarded
        │                             credentials; 502 when it refused the gateway's own
        ├── UpstreamClosed            the connection ended while streaming (an error chunk)
        └── UpstreamEventTooLarge     one event grew past max_event_bytes (an error chunk)

Foreign exceptions (``OSError``, ``websockets`` and ``h11`` errors) are mapped to these only at the
transport boundary (:func:`chunkbridge.gateway.transports.base.map_upstream_errors`). An unexpected
exception never reaches the client as text: it gets a generic message, the detail goes to the log.
"""

from __future__ import annotations

__all__ = [
    "BadRequest",
    "ChatFull",
    "StoreDown",
    "ServiceUnavailable",
    "StaleTurn",
    "Forbidden",
    "GatewayError",
    "NotFound",
    "PayloadTooLarge",
    "QueueFull",
    "RequestError",
    "TurnInProgress",
    "Unauthorized",
    "UnsupportedMediaType",
    "UpstreamAuthRejected",
    "UpstreamClosed",
    "UpstreamError",
    "UpstreamEventTooLarge",
    "UpstreamTimeout",
    "UpstreamUnavailable",
]


class GatewayError(Exception):
    """Every error the gateway raises on purpose: ``status_hint`` is the HTTP status while no
    byte of the response has gone out, ``client_message`` the short text the AI SDK shows the
    user as is, ``detail`` what only the log gets (see the module for the tree)."""

    status_hint = 500
    client_message = "The gateway failed."
    #: Headers of the HTTP error response (``Retry-After``…).
    headers: dict[str, str] = {}

    def __init__(self, client_message: str | None = None, *, detail: str | None = None) -> None:
        if client_message is not None:
            self.client_message = client_message
        #: Log-only detail (never sent to the client).
        self.detail = detail
        super().__init__(
            self.client_message if detail is None else f"{self.client_message} ({detail})"
        )


class RequestError(GatewayError):
    """The client's request cannot be served (400, 401, 403, 404, 409, 413, 415): answer
    ``client_message`` with ``status_hint`` — :func:`chunkbridge.parse_chat_request` raises
    it for a body it refuses."""

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


class NotFound(RequestError):
    status_hint = 404
    client_message = "Not found."


class TurnInProgress(RequestError):
    status_hint = 409
    client_message = "This session is already answering; wait for it or stop it first."


class QueueFull(TurnInProgress):
    client_message = (
        "This session is answering and too many messages wait already; send yours once an "
        "answer has come."
    )


class StaleTurn(RequestError):
    status_hint = 409
    client_message = (
        "This chat has an answer you have not seen yet; the message was not sent. Reload the "
        "chat and send it again."
    )


class ChatFull(RequestError):
    status_hint = 409
    client_message = "This chat is full; start a new one."


class StoreDown(GatewayError):
    """The transcript store cannot be reached and the turn needs it (``history = stored``)."""

    status_hint = 503
    client_message = "The conversation cannot be loaded right now; please try again."


class ServiceUnavailable(GatewayError):
    status_hint = 503
    client_message = "The server is restarting; please try again."

    def __init__(self, retry_after: int, *, detail: str | None = None) -> None:
        super().__init__(detail=detail)
        self.headers = {"retry-after": str(retry_after)}


class UpstreamError(GatewayError):
    status_hint = 502
    client_message = "The agent is unavailable right now."


class UpstreamUnavailable(UpstreamError):
    status_hint = 502


class UpstreamTimeout(UpstreamError):
    status_hint = 504
    client_message = "The agent did not answer in time."


class UpstreamAuthRejected(UpstreamError):
    """The upstream answered 401/403. Whose credentials it refused decides the answer: the
    client's (forwarded, e.g. ``auth = bearer-forward``) → the same 401/403, so the app can ask
    the user to sign in again; the gateway's own (a dialect's API key) → 502, a deployment
    problem the user cannot fix."""

    def __init__(self, status: int, *, detail: str | None = None) -> None:
        super().__init__(detail=detail)
        self.status = status
        self.blame_client(False)

    def blame_client(self, client_credentials: bool) -> None:
        """Say whose credentials were refused (the transport does not know; the caller does)."""
        if client_credentials:
            self.status_hint = 403 if self.status == 403 else 401
            forbidden = self.status == 403
            self.client_message = (
                Forbidden.client_message if forbidden else Unauthorized.client_message
            )
        else:
            self.status_hint = 502
            self.client_message = UpstreamError.client_message


class UpstreamClosed(UpstreamError):
    client_message = "The connection to the agent was lost."


class UpstreamEventTooLarge(UpstreamError):
    client_message = "The agent sent an event larger than this gateway accepts."
