"""``demo``: the gateway in front of a dialect's built-in demo backend, with a chat page.

:func:`build_demo` makes the app from the parsed flags without serving it (a test serves it in
its own event loop); :func:`cmd_demo` prints where to look and serves it until a signal.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chunkbridge.gateway.cli.flags import SubParsers, add_settings, fail, load_settings
from chunkbridge.gateway.config import ConfigError, GatewayConfig

__all__ = ["Demo", "build_demo", "register"]

#: The demo's chats: one file that outlives a restart of the demo, outside the working tree.
DEMO_STORE = Path(tempfile.gettempdir()) / "chunkbridge-demo.sqlite3"

Hook = Callable[[], Awaitable[None]]


@dataclass(frozen=True)
class Demo:
    """A demo ready to serve: its app and what the banner tells about it."""

    app: Any
    config: GatewayConfig
    dialect: str
    transport: str  # how the gateway reaches the demo backend
    agent: bool  # the agent loop over the demo MCP server
    traces: bool  # each turn's trace drawn on the page


def build_demo(args: argparse.Namespace) -> Demo:
    """The demo app of ``chunkbridge demo ARGS`` (:class:`ConfigError` on a bad setting)."""
    from chunkbridge.gateway.devtools.demo import demo_routes
    from chunkbridge.gateway.http.app import create_app

    dialect = _demo_dialect("anthropic-messages" if args.agent else args.dialect)
    script, agent = dialect.demo, {}
    if args.agent:  # the scripted model calls the demo MCP server's tools through the loop
        from chunkbridge.gateway.devtools.agent_demo import agent_script

        script = agent_script
        module = "chunkbridge.gateway.devtools.demo_tools"
        agent = {"tools": {"demo": {"command": sys.executable, "args": ["-m", module]}}}
    config = load_settings(
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
    ).config
    trace_routes, stop_traces = _demo_traces(config.telemetry)
    backend = _backend(dialect, script, config)
    on_shutdown = backend.on_shutdown
    if stop_traces is not None:
        on_shutdown = _then(on_shutdown, stop_traces)
    traces = bool(trace_routes)
    routes = demo_routes(
        backend.upstream, dialect.name, agent=bool(agent), traces=traces, busy=config.busy
    )
    app = create_app(
        backend.config,
        extra_routes=[*routes, *backend.routes, *trace_routes],
        on_startup=backend.on_startup,
        on_shutdown=on_shutdown,
    )
    return Demo(app, backend.config, dialect.name, backend.transport, bool(agent), traces)


@dataclass(frozen=True)
class _Backend:
    """The demo backend of a dialect, and how the gateway is wired to it."""

    upstream: Any  # DemoUpstream | DemoHttpUpstream
    transport: str
    config: GatewayConfig  # with the backend's URL as the upstream (or set at start-up)
    routes: list[Any]
    on_startup: Callable[[Any], Awaitable[None]] | None
    on_shutdown: Hook | None


def _backend(dialect: Any, script: Any, config: GatewayConfig) -> _Backend:
    """A WebSocket dialect's backend is a server of its own on 127.0.0.1, started with the app;
    an HTTP dialect's is a few routes of this very app (a model API look-alike)."""
    from chunkbridge.gateway.devtools.upstreams import DemoHttpUpstream, DemoUpstream
    from chunkbridge.gateway.service import Gateway

    if dialect.websocket is not None:
        upstream = DemoUpstream(script)

        async def start_upstream(state: Gateway) -> None:
            await upstream.start("127.0.0.1", 0)
            state.configure(config.model_copy(update={"upstream": upstream.url_template}))

        return _Backend(upstream, "WebSocket", config, [], start_upstream, upstream.aclose)
    if config.port == 0:
        raise ConfigError("the demo of an HTTP dialect calls its own port: give --port")
    http = DemoHttpUpstream(script)
    own = "127.0.0.1" if config.host in ("0.0.0.0", "::", "") else config.host
    url = f"http://{own}:{config.port}/demo/provider/sessions/{{session_id}}"
    config = config.model_copy(update={"upstream": url})
    transport = "HTTP SSE, mounted at /demo/provider"
    return _Backend(http, transport, config, http.routes("/demo/provider"), None, None)


def cmd_demo(args: argparse.Namespace) -> int:
    from chunkbridge.gateway.logging import configure_logging
    from chunkbridge.gateway.server import run_app

    try:
        demo = build_demo(args)
    except ConfigError as exc:
        return fail("demo", exc)
    config = demo.config
    configure_logging(config.log_level, config.log_format)
    for line in _banner(demo):
        print(line, flush=True)
    run_app(demo.app, config.host, config.port)
    return 0


def _banner(demo: Demo) -> list[str]:
    config = demo.config
    base = f"http://{config.host}:{config.port}"
    lines = [
        f"chunkbridge demo: open {base}/ in a browser",
        f"  chat endpoint  POST {base}/api/sessions/<any-id>/chat  (useChat, ai 5/6/7)",
        f"  health         {base}/healthz   metrics {base}/metrics",
    ]
    if config.store == "sqlite":
        lines.append(f"  chats kept in  {config.store_path} (--store off: none)")
    lines.append(
        f"  the demo upstream ({demo.dialect} over {demo.transport}) runs on 127.0.0.1; "
        "Ctrl-C stops"
    )
    if config.busy != "reject":
        lines.append(
            f"  busy           {config.busy}: a message sent while an answer streams "
            f"(resume = {config.resume})"
        )
    if demo.agent:
        lines.append("  tools          the demo MCP server (stdio), run by the agent loop")
    if demo.traces:
        from chunkbridge.gateway.devtools.traces import collector_endpoint

        sent = collector_endpoint()
        where = f" and sent to {sent} (OTLP/HTTP)" if sent else " (no OTEL_EXPORTER_OTLP_ENDPOINT)"
        lines.append(f"  traces         each turn's trace drawn on the page{where}")
    return lines


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


def _then(first: Hook | None, last: Callable[[], None]) -> Hook:
    """``first`` (if any), then ``last``: one shutdown hook."""

    async def both() -> None:
        if first is not None:
            await first()
        last()

    return both


def register(sub: SubParsers) -> None:
    """Add ``demo``."""
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
