"""``serve`` and ``dialects``: running the gateway, and what it can run.

``serve`` (like ``demo``, :mod:`chunkbridge.gateway.cli.demo`) takes every setting as a flag,
generated from the settings models (:mod:`chunkbridge.gateway.cli.flags`): the gateway's own and
each registered dialect's.
"""

from __future__ import annotations

import argparse
from typing import Any

from chunkbridge.gateway.cli.flags import SubParsers, add_settings, fail, load_settings
from chunkbridge.gateway.config import ConfigError

__all__ = ["register"]


def cmd_dialects(args: argparse.Namespace) -> int:
    from chunkbridge.gateway.registry import registry

    found = registry()
    for name, dialect in found.dialects.items():
        transports = "/".join(t for t in ("ws", "http") if t in dialect.transports)
        if dialect.in_process is not None:
            transports = "/".join(t for t in (transports, "in-process") if t)
        print(f"{name:18} {transports:10} {dialect.summary}")
    for name, why in found.broken.items():
        print(f"{name:18} {'broken':10} {why}")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from chunkbridge.gateway.http.app import create_app
    from chunkbridge.gateway.logging import configure_logging, get_logger
    from chunkbridge.gateway.server import run_app

    try:
        loaded = load_settings(args, args.flags)
        config = loaded.config
        app = create_app(config)
    except ConfigError as exc:
        return fail("serve", exc)
    configure_logging(config.log_level, config.log_format)
    log = get_logger()
    for warning in loaded.warnings:
        log.warning("config.warning", detail=warning)
    log.info(
        "gateway.start",
        host=config.host,
        port=config.port,
        dialect=config.dialect,
        upstream=config.upstream,
        target=config.target,
        reset_step=config.reset_step,
        auth=config.auth.value,
    )
    if config.workers > 1:
        from chunkbridge.gateway.server import run_workers

        if config.resume == "memory":
            log.warning(
                "config.warning",
                detail="resume = memory with several workers: a resume only finds the turns "
                "of the worker it lands on; use resume = redis",
            )
        run_workers(config, config.workers, f"{__name__}:worker_app")
        return 0
    run_app(app, config.host, config.port, config.log_level)
    return 0


def register(sub: SubParsers) -> None:
    """Add ``dialects`` and ``serve``."""
    dialects = sub.add_parser("dialects", help="list the upstream dialects")
    dialects.set_defaults(func=cmd_dialects)

    serve = sub.add_parser(
        "serve",
        help="run the gateway in front of an upstream",
        description="Settings come from --config FILE.toml, then CHUNKBRIDGE_* environment "
        "variables, then these flags (flags win). Every setting: docs/configuration.md.",
    )
    serve.set_defaults(func=cmd_serve, flags=add_settings(serve))


def worker_app() -> Any:
    """The app of one ``serve --workers`` process (the factory uvicorn imports in each)."""
    from chunkbridge.gateway.http.app import create_app
    from chunkbridge.gateway.logging import configure_logging
    from chunkbridge.gateway.server import drain_on_signals, worker_config

    config = worker_config()
    configure_logging(config.log_level, config.log_format)
    return create_app(config, on_startup=drain_on_signals)
