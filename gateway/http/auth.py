"""Request authentication: ``none``, ``bearer-forward`` and ``jwt`` (spec: seed-protocols §1).

:func:`authenticate` returns the headers to add to the upstream handshake, or raises
:class:`~chunkbridge.gateway.errors.Unauthorized` (no or bad credentials) /
:class:`~chunkbridge.gateway.errors.Forbidden` (valid credentials, but not for this session).
"""

from __future__ import annotations

from typing import Any

from chunkbridge.gateway.config import AuthMode, GatewayConfig
from chunkbridge.gateway.errors import Forbidden, Unauthorized

__all__ = ["authenticate", "bearer_token"]


def bearer_token(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def authenticate(
    config: GatewayConfig, authorization: str | None, session_id: str
) -> dict[str, str]:
    """Check the request's credentials; the headers to forward upstream."""
    if config.auth is AuthMode.NONE:
        return {}
    token = bearer_token(authorization)
    if token is None:
        raise Unauthorized(detail="missing bearer token")
    if config.auth is AuthMode.BEARER_FORWARD:
        return {"Authorization": f"Bearer {token}"}
    claims = _verify_jwt(config, token)
    allowed = claims.get(config.jwt_sessions_claim)
    if allowed != "*" and not (isinstance(allowed, list) and session_id in allowed):
        raise Forbidden(detail=f"session not in claim {config.jwt_sessions_claim!r}")
    return {"Authorization": f"Bearer {token}"}


def _verify_jwt(config: GatewayConfig, token: str) -> dict[str, Any]:
    import jwt  # imported on use: PyJWT + cryptography cost ~10 MB of RSS per process

    options: Any = {"require": ["exp"]}
    try:
        return jwt.decode(
            token,
            config.jwt_verification_key(),
            algorithms=config.jwt_algorithms,
            issuer=config.jwt_issuer,
            audience=config.jwt_audience,
            options=options,
        )
    except jwt.PyJWTError as exc:
        raise Unauthorized(detail=f"invalid token: {type(exc).__name__}") from exc
