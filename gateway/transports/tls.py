"""The one TLS policy of the gateway's outgoing HTTPS connections (model providers, agent
backends, MCP servers): verify with the system's CAs *and* those ``SSL_CERT_FILE`` /
``SSL_CERT_DIR`` name, and present ``tls_client_cert`` when a server asks for one (mTLS).

OpenSSL reads ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` *instead of* its built-in paths, so a company
proxy's CA set there would stop every public provider from verifying; both are loaded here.
"""

from __future__ import annotations

import os
import ssl
from pathlib import Path

from chunkbridge.gateway.config import ConfigError, GatewayConfig

__all__ = ["client_tls", "tls_context"]


def tls_context(client_cert: Path | None = None, client_key: Path | None = None) -> ssl.SSLContext:
    """A verifying client context (see the module); ``client_key`` may be left out when the key is
    in ``client_cert``'s file. Raises :class:`ConfigError` when a file cannot be used."""
    context = ssl.create_default_context()
    paths = ssl.get_default_verify_paths()
    try:
        if paths.openssl_cafile and os.path.isfile(paths.openssl_cafile):
            context.load_verify_locations(cafile=paths.openssl_cafile)
        if paths.openssl_capath and os.path.isdir(paths.openssl_capath):
            context.load_verify_locations(capath=paths.openssl_capath)
        if cafile := os.environ.get(paths.openssl_cafile_env):
            context.load_verify_locations(cafile=cafile)
        if capath := os.environ.get(paths.openssl_capath_env):
            context.load_verify_locations(capath=capath)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"cannot load the CAs SSL_CERT_FILE / SSL_CERT_DIR name: {exc}") from exc
    if client_cert is not None:
        try:
            context.load_cert_chain(client_cert, client_key)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"cannot load tls_client_cert / tls_client_key: {exc}") from exc
    return context


def client_tls(config: GatewayConfig) -> ssl.SSLContext | None:
    """The context for ``config``'s client certificate, built once at start-up (a bad file is a
    :class:`ConfigError` then, not a failed turn later); ``None`` without one (each pool then
    builds the plain policy when it first needs it)."""
    if config.tls_client_cert is None:
        if config.tls_client_key is not None:
            raise ConfigError("tls_client_key needs tls_client_cert (the certificate it goes with)")
        return None
    return tls_context(config.tls_client_cert, config.tls_client_key)
