"""``serve``, ``demo`` and ``dialects``: running the gateway, and what it can run.

``serve`` and ``demo`` take every setting as a flag, generated from the settings models
(:mod:`chunkbridge.gateway.cli.flags`): the gateway's own and each registered dialect's.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from chunkbridge.gateway.cli.flags import SubParsers, add_settings, fail, load_settings
from chunkbridge.gateway.config import ConfigError

__all__ = ["register"]

#: The demo's chats: one file that outlives a restart of the demo, outside the working tree.
DEMO_STORE = Path(tempfile.gettempdir()) / "chunkbridge-demo.sqlite3"


def cmd_dialects(args: argparse.Namespace) -> int:
    from chunkbridge.gateway.registry import registry

    found = registry()
    for name, dialect in found.dialects.items():
        transports = "/".join(t for t in ("ws", "http") if t in dialect.transports)
        print(f"{name:18} {transports:8} {dialect.summary}")
    for name, why in found.broken.items():
        print(f"{name:18} {'broken':8} {why}")
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


def _demo_dialect(requested: str | None) -> Any:
    from chunkbridge.gateway.registry import get_dialect, registry

    if requested is not None:
        dialect = get_dialect(requested)
        if dialect.demo is None:
            raise ConfigError(f"dialect {requested!r} has no demo")
        return dialect
    for dialect in registry().dialects.values():
        if dialect.demo is not None:
            return dialect
    raise ConfigError("no registered dialect has a demo")


def cmd_demo(args: argparse.Namespace) -> int:
    from chunkbridge.gateway.devtools.demo import demo_routes
    from chunkbridge.gateway.devtools.upstreams import DemoHttpUpstream, DemoUpstream
    from chunkbridge.gateway.http.app import create_app
    from chunkbridge.gateway.logging import configure_logging
    from chunkbridge.gateway.server import run_app
    from chunkbridge.gateway.service import Gateway

    try:
        dialect = _demo_dialect("anthropic-messages" if args.agent else args.dialect)
        script, agent = dialect.demo, {}
        if args.agent:  # the scripted model calls the demo MCP server's tools through the loop
            from chunkbridge.gateway.devtools.agent_demo import agent_script

            script = agent_script
            module = "chunkbridge.gateway.devtools.demo_tools"
            agent = {"tools": {"demo": {"command": sys.executable, "args": ["-m", module]}}}
        loaded = load_settings(
            args,
            args.flags,
            dialect=dialect.name,
            upstream="ws://127.0.0.1:1/sessions/{session_id}/ws",  # replaced below / at start-up
            log_format=args.log_format or "console",
            # the demo resumes a reloaded page's answer and keeps its chats unless told otherwise
            resume=getattr(args, "resume", None) or "memory",
            store=getattr(args, "store", None) or "sqlite",
            store_path=getattr(args, "store_path", None) or DEMO_STORE,
            **agent,
        )
        config = loaded.config
        trace_routes, stop_traces = _demo_traces(config.telemetry)
        upstream: DemoUpstream | DemoHttpUpstream
        on_shutdown: Callable[[], Awaitable[None]] | None
        if dialect.websocket is not None:
            upstream = ws_upstream = DemoUpstream(script)
            transport = "WebSocket"

            async def start_upstream(state: Gateway) -> None:
                await ws_upstream.start("127.0.0.1", 0)
                state.configure(config.model_copy(update={"upstream": ws_upstream.url_template}))

            on_startup, on_shutdown = start_upstream, ws_upstream.aclose
            upstream_routes = []
        else:
            # An HTTP demo upstream is a few routes of this very app (a model API look-alike).
            if config.port == 0:
                raise ConfigError("the demo of an HTTP dialect calls its own port: give --port")
            upstream = DemoHttpUpstream(script)
            transport = "HTTP SSE, mounted at /demo/provider"
            own = "127.0.0.1" if config.host in ("0.0.0.0", "::", "") else config.host
            url = f"http://{own}:{config.port}/demo/provider/sessions/{{session_id}}"
            config = config.model_copy(update={"upstream": url})
            on_startup, on_shutdown, upstream_routes = None, None, upstream.routes("/demo/provider")
        if stop_traces is not None:
            on_shutdown = _then(on_shutdown, stop_traces)
        app = create_app(
            config,
            extra_routes=[
                *demo_routes(upstream, dialect.name, agent=bool(agent), traces=bool(trace_routes)),
                *upstream_routes,
                *trace_routes,
            ],
            on_startup=on_startup,
            on_shutdown=on_shutdown,
        )
    except ConfigError as exc:
        return fail("demo", exc)
    configure_logging(config.log_level, config.log_format)
    base = f"http://{config.host}:{config.port}"
    print(f"chunkbridge demo: open {base}/ in a browser", flush=True)
    print(
        f"  chat endpoint  POST {base}/api/sessions/<any-id>/chat  (useChat, ai 5/6/7)", flush=True
    )
    print(f"  health         {base}/healthz   metrics {base}/metrics", flush=True)
    if config.store == "sqlite":
        print(f"  chats kept in  {config.store_path} (--store off: none)", flush=True)
    print(
        f"  the demo upstream ({dialect.name} over {transport}) runs on 127.0.0.1; Ctrl-C stops",
        flush=True,
    )
    if agent:
        print("  tools          the demo MCP server (stdio), run by the agent loop", flush=True)
    if trace_routes:
        from chunkbridge.gateway.devtools.traces import collector_endpoint

        sent = collector_endpoint()
        where = f" and sent to {sent} (OTLP/HTTP)" if sent else " (no OTEL_EXPORTER_OTLP_ENDPOINT)"
        print(f"  traces         each turn's trace drawn on the page{where}", flush=True)
    run_app(app, config.host, config.port)
    return 0


def _demo_traces(telemetry: str) -> tuple[list[Any], Callable[[], None] | None]:
    """With telemetry on: the demo's trace routes, and the shutdown of its tracer provider."""
    if telemetry == "off":
        return [], None
    from chunkbridge.gateway.telemetry_sdk import SDK_MISSING

    try:
        from chunkbridge.gateway.devtools.traces import install_recorder
    except ImportError as exc:
        raise ConfigError(SDK_MISSING) from exc
    recorder, shutdown = install_recorder()
    return recorder.routes(), shutdown


def _then(
    first: Callable[[], Awaitable[None]] | None, last: Callable[[], None]
) -> Callable[[], Awaitable[None]]:
    """``first`` (if any), then ``last``: one shutdown hook."""

    async def both() -> None:
        if first is not None:
            await first()
        last()

    return both


def register(sub: SubParsers) -> None:
    """Add ``dialects``, ``serve`` and ``demo``."""
    dialects = sub.add_parser("dialects", help="list the upstream dialects")
    dialects.set_defaults(func=cmd_dialects)

    serve = sub.add_parser(
        "serve",
        help="run the gateway in front of an upstream",
        description="Settings come from --config FILE.toml, then CHUNKBRIDGE_* environment "
        "variables, then these flags (flags win). See the README for every setting.",
    )
    serve.set_defaults(func=cmd_serve, flags=add_settings(serve))

    demo = sub.add_parser(
        "demo",
        help="the gateway with a built-in demo upstream and a chat page",
        description="Runs a dialect's demo backend (the first registered dialect that has one, "
        "or --dialect) on 127.0.0.1 and the gateway in front of it. Every setting of 'serve' "
        "but --upstream applies.",
    )
    demo.add_argument(
        "--agent",
        action="store_true",
        help="the agent loop: a scripted model (anthropic-messages) calls the tools of a "
        "built-in MCP server, run by the gateway (needs chunkbridge[mcp])",
    )
    demo.set_defaults(func=cmd_demo, flags=add_settings(demo, exclude=["upstream"]))


def worker_app() -> Any:
    """The app of one ``serve --workers`` process (the factory uvicorn imports in each)."""
    from chunkbridge.gateway.http.app import create_app
    from chunkbridge.gateway.logging import configure_logging
    from chunkbridge.gateway.server import drain_on_signals, worker_config

    config = worker_config()
    configure_logging(config.log_level, config.log_format)
    return create_app(config, on_startup=drain_on_signals)
