"""Subcommands beyond ``validate``: registered here so :mod:`chunkbridge.gateway.cli` stays small.

``serve``, ``demo`` and ``record`` take every setting as a flag, generated from the settings models
(:mod:`chunkbridge.gateway.flags`): the gateway's own and each registered dialect's.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chunkbridge.gateway.config import ConfigError, GatewayConfig, LoadedConfig

__all__ = ["register"]

AddTarget = Callable[[argparse.ArgumentParser], None]


@dataclass(slots=True)
class _Flags:
    """The generated flags of one subcommand: argparse dest → setting."""

    gateway: dict[str, str] = field(default_factory=dict)
    dialects: dict[str, dict[str, str]] = field(default_factory=dict)


def _add_settings(parser: argparse.ArgumentParser, exclude: Iterable[str] = ()) -> _Flags:
    from chunkbridge.gateway.dialects import registry
    from chunkbridge.gateway.flags import add_model_flags

    parser.add_argument("--config", metavar="FILE.toml", help="TOML configuration file")
    flags = _Flags(add_model_flags(parser, GatewayConfig, exclude=exclude))
    for name, dialect in registry().dialects.items():
        if dialect.settings.model_fields:
            group = parser.add_argument_group(f"dialect {name}")
            flags.dialects[name] = add_model_flags(group, dialect.settings, prefix=f"{name}-")
    return flags


def _load(args: argparse.Namespace, flags: _Flags, **overrides: Any) -> LoadedConfig:
    from chunkbridge.gateway.config import load_config
    from chunkbridge.gateway.dialects import registry
    from chunkbridge.gateway.flags import collect

    models = {name: d.settings for name, d in registry().dialects.items()}
    values = collect(args, flags.gateway)
    values.update(overrides)
    return load_config(
        Path(args.config) if args.config else None,
        dialect_models=models,
        dialect_flags={name: collect(args, dests) for name, dests in flags.dialects.items()},
        **values,
    )


def _fail(command: str, message: object) -> int:
    print(f"chunkbridge {command}: {message}", file=sys.stderr)
    return 2


# -- dialects, replay ----------------------------------------------------------------------------


def cmd_dialects(args: argparse.Namespace) -> int:
    from chunkbridge.gateway.dialects import registry

    found = registry()
    for name, dialect in found.dialects.items():
        transports = "/".join(t for t in ("ws", "http") if t in dialect.transports)
        print(f"{name:18} {transports:8} {dialect.summary}")
    for name, why in found.broken.items():
        print(f"{name:18} {'broken':8} {why}")
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from chunkbridge.gateway.dialects import UnknownDialect, get_dialect
    from chunkbridge.gateway.recordings import frames_of
    from chunkbridge.gateway.replay import golden_diff, replay_frames
    from chunkbridge.kit import UnknownEventPolicy

    try:
        get_dialect(args.dialect)
    except UnknownDialect as exc:
        return _fail("replay", exc)
    try:
        raw = sys.stdin.buffer.read() if args.file == "-" else Path(args.file).read_bytes()
    except OSError as exc:
        return _fail("replay", f"cannot read {args.file}: {exc.strerror}")
    output = replay_frames(
        args.dialect,
        frames_of(raw.decode("utf-8", "surrogateescape")),
        target=args.target,
        unknown_events=UnknownEventPolicy(args.unknown_events),
    )
    if args.update:
        if not args.check:
            return _fail("replay", "--update needs --check GOLDEN.sse")
        Path(args.check).write_bytes(output)
        print(f"wrote {args.check}", file=sys.stderr)
        return 0
    if args.check:
        try:
            expected = Path(args.check).read_bytes()
        except OSError as exc:
            return _fail("replay", f"cannot read {args.check}: {exc.strerror}")
        diff = golden_diff(expected, output, args.check)
        if diff:
            sys.stdout.write(diff)
            return 1
        return 0
    sys.stdout.buffer.write(output)
    return 0


# -- serve, demo, mock-upstream, record ----------------------------------------------------------


def cmd_serve(args: argparse.Namespace) -> int:
    from chunkbridge.gateway.app import create_app
    from chunkbridge.gateway.logging import configure_logging, get_logger
    from chunkbridge.gateway.server import run_app

    try:
        loaded = _load(args, args.flags)
        config = loaded.config
        app = create_app(config)
    except ConfigError as exc:
        return _fail("serve", exc)
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
        run_workers(config, config.workers)
        return 0
    run_app(app, config.host, config.port, config.log_level)
    return 0


def _demo_dialect(requested: str | None) -> Any:
    from chunkbridge.gateway.dialects import get_dialect, registry

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
    from chunkbridge.gateway.app import GatewayState, create_app
    from chunkbridge.gateway.demo import demo_routes
    from chunkbridge.gateway.logging import configure_logging
    from chunkbridge.gateway.server import run_app
    from chunkbridge.gateway.upstreams import DemoHttpUpstream, DemoUpstream

    try:
        dialect = _demo_dialect(args.dialect)
        loaded = _load(
            args,
            args.flags,
            dialect=dialect.name,
            upstream="ws://127.0.0.1:1/sessions/{session_id}/ws",  # replaced below / at start-up
            log_format=args.log_format or "console",
            # the demo resumes a reloaded page's answer unless told otherwise
            resume=getattr(args, "resume", None) or "memory",
        )
        config = loaded.config
        upstream: DemoUpstream | DemoHttpUpstream
        if dialect.websocket is not None:
            upstream = ws_upstream = DemoUpstream(dialect.demo)
            transport = "WebSocket"

            async def start_upstream(state: GatewayState) -> None:
                await ws_upstream.start("127.0.0.1", 0)
                state.configure(config.model_copy(update={"upstream": ws_upstream.url_template}))

            on_startup, on_shutdown = start_upstream, ws_upstream.aclose
            upstream_routes = []
        else:
            # An HTTP demo upstream is a few routes of this very app (a model API look-alike).
            if config.port == 0:
                raise ConfigError("the demo of an HTTP dialect calls its own port: give --port")
            upstream = DemoHttpUpstream(dialect.demo)
            transport = "HTTP SSE, mounted at /demo/provider"
            own = "127.0.0.1" if config.host in ("0.0.0.0", "::", "") else config.host
            url = f"http://{own}:{config.port}/demo/provider/sessions/{{session_id}}"
            config = config.model_copy(update={"upstream": url})
            on_startup, on_shutdown, upstream_routes = None, None, upstream.routes("/demo/provider")
        app = create_app(
            config,
            extra_routes=[*demo_routes(upstream, dialect.name), *upstream_routes],
            on_startup=on_startup,
            on_shutdown=on_shutdown,
        )
    except ConfigError as exc:
        return _fail("demo", exc)
    configure_logging(config.log_level, config.log_format)
    base = f"http://{config.host}:{config.port}"
    print(f"chunkbridge demo: open {base}/ in a browser", flush=True)
    print(
        f"  chat endpoint  POST {base}/api/sessions/<any-id>/chat  (useChat, ai 5/6/7)", flush=True
    )
    print(f"  health         {base}/healthz   metrics {base}/metrics", flush=True)
    print(
        f"  the demo upstream ({dialect.name} over {transport}) runs on 127.0.0.1; Ctrl-C stops",
        flush=True,
    )
    run_app(app, config.host, config.port)
    return 0


def cmd_mock_upstream(args: argparse.Namespace) -> int:
    import asyncio
    import signal

    from chunkbridge.gateway.upstreams import RecordingUpstream, recording_http_app

    files = [Path(f) for f in args.files]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        return _fail("mock-upstream", f"no such file: {', '.join(missing)}")
    if args.transport == "http":
        from chunkbridge.gateway.server import run_app

        base = f"http://{args.host}:{args.port}"
        print(
            f"mock upstream: {base}/sessions/{{session_id}}/… (any POST) serving "
            f"{len(files)} recording(s) as server-sent events, timing {args.timing}",
            flush=True,
        )
        run_app(recording_http_app(files, args.timing), args.host, args.port, "warning")
        return 0

    async def run() -> None:
        upstream = RecordingUpstream(files, timing=args.timing)
        await upstream.start(args.host, args.port)
        print(
            f"mock upstream: ws://{args.host}:{upstream.port}/sessions/{{session_id}}/ws "
            f"serving {len(files)} recording(s), timing {args.timing}",
            flush=True,
        )
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        await upstream.aclose()

    asyncio.run(run())
    return 0


def cmd_record(args: argparse.Namespace) -> int:
    import asyncio

    from chunkbridge.gateway.record import record

    if not (args.upstream and args.dialect):
        return _fail("record", "--upstream and --dialect are required")
    try:
        config = _load(args, args.flags).config
        count = asyncio.run(
            record(
                config,
                args.prompt,
                Path(args.output),
                session_id=args.session,
                max_seconds=args.timeout,
            )
        )
    except ConfigError as exc:
        return _fail("record", exc)
    except Exception as exc:  # the CLI reports, it does not trace
        print(f"chunkbridge record: {exc}", file=sys.stderr)
        return 1
    print(f"recorded {count} frames into {args.output}", file=sys.stderr)
    return 0


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], add_target: AddTarget
) -> None:
    """Add the remaining subcommands to ``sub``."""
    dialects = sub.add_parser("dialects", help="list the upstream dialects")
    dialects.set_defaults(func=cmd_dialects)

    replay = sub.add_parser(
        "replay",
        help="translate a recorded upstream session (.jsonl) into an SSE body",
        description="Each line of FILE.jsonl is one upstream message (the JSON payload of a "
        "WebSocket frame or SSE data line); the end of the file is the upstream closing. The SSE "
        "body goes to stdout with deterministic ids.",
    )
    replay.add_argument("file", metavar="FILE.jsonl", help="recording, or - for stdin")
    replay.add_argument("--dialect", required=True, help="upstream dialect (see 'dialects')")
    add_target(replay)
    replay.add_argument(
        "--unknown-events",
        choices=["forward", "drop", "error"],
        default="forward",
        help="what unknown or malformed upstream events become (default forward: data parts)",
    )
    replay.add_argument(
        "--check", metavar="GOLDEN.sse", help="compare with a golden file; exit 1 with a diff"
    )
    replay.add_argument("--update", action="store_true", help="with --check: rewrite the golden")
    replay.set_defaults(func=cmd_replay)

    serve = sub.add_parser(
        "serve",
        help="run the gateway in front of an upstream",
        description="Settings come from --config FILE.toml, then CHUNKBRIDGE_* environment "
        "variables, then these flags (flags win). See the README for every setting.",
    )
    serve.set_defaults(func=cmd_serve, flags=_add_settings(serve))

    demo = sub.add_parser(
        "demo",
        help="the gateway with a built-in demo upstream and a chat page",
        description="Runs a dialect's demo backend (the first registered dialect that has one, "
        "or --dialect) on 127.0.0.1 and the gateway in front of it. Every setting of 'serve' "
        "but --upstream applies.",
    )
    demo.set_defaults(func=cmd_demo, flags=_add_settings(demo, exclude=["upstream"]))

    mock = sub.add_parser(
        "mock-upstream", help="serve recorded sessions as a WebSocket or HTTP (SSE) upstream"
    )
    mock.add_argument("files", nargs="+", metavar="FILE.jsonl")
    mock.add_argument("--host", default="127.0.0.1")
    mock.add_argument("--port", type=int, default=9000)
    mock.add_argument("--timing", choices=["recorded", "fast"], default="fast")
    mock.add_argument(
        "--transport",
        choices=["websocket", "http"],
        default="websocket",
        help="websocket (default) for WebSocket dialects, http for HTTP dialects (SSE answers)",
    )
    mock.set_defaults(func=cmd_mock_upstream)

    rec = sub.add_parser(
        "record",
        help="record an upstream session's raw frames as .jsonl",
        description="Starts a turn exactly as 'serve' would (--upstream and --dialect are "
        "required; every setting of 'serve' applies) and writes each upstream frame.",
    )
    rec.add_argument("--prompt", required=True, help="the user message to send")
    rec.add_argument("--session", default="recording", help="session id for {session_id}")
    rec.add_argument("--timeout", type=float, default=300, help="stop after this many seconds")
    rec.add_argument("-o", "--output", required=True, metavar="FILE.jsonl")
    rec.set_defaults(func=cmd_record, flags=_add_settings(rec))
