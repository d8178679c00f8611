"""Subcommands beyond ``validate``: registered here so :mod:`gateway.cli` stays small."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["register"]


def cmd_dialects(args: argparse.Namespace) -> int:
    from gateway.dialects import available_dialects

    for name, cls in available_dialects().items():
        print(f"{name:16} {cls.summary}")
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from gateway.dialects import UnknownDialect, get_dialect
    from gateway.replay import golden_diff, replay_lines
    from translators.base import UnknownEventPolicy

    try:
        get_dialect(args.dialect)
    except UnknownDialect as exc:
        print(f"chunkbridge replay: {exc}", file=sys.stderr)
        return 2
    try:
        raw = sys.stdin.buffer.read() if args.file == "-" else Path(args.file).read_bytes()
    except OSError as exc:
        print(f"chunkbridge replay: cannot read {args.file}: {exc.strerror}", file=sys.stderr)
        return 2
    text = raw.decode("utf-8", "surrogateescape")
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    output = replay_lines(
        args.dialect,
        lines,
        target=args.target,
        unknown_events=UnknownEventPolicy(args.unknown_events),
    )
    if args.update:
        if not args.check:
            print("chunkbridge replay: --update needs --check GOLDEN.sse", file=sys.stderr)
            return 2
        Path(args.check).write_bytes(output)
        print(f"wrote {args.check}", file=sys.stderr)
        return 0
    if args.check:
        try:
            expected = Path(args.check).read_bytes()
        except OSError as exc:
            print(f"chunkbridge replay: cannot read {args.check}: {exc.strerror}", file=sys.stderr)
            return 2
        diff = golden_diff(expected, output, args.check)
        if diff:
            sys.stdout.write(diff)
            return 1
        return 0
    sys.stdout.buffer.write(output)
    return 0


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    add_target: Callable[[argparse.ArgumentParser], None],
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
    register_servers(sub, add_target)


# -- serve, demo, mock-upstream, record ------------------------------------------------------

_SERVE_FLAGS: list[tuple[str, dict]] = [
    ("--host", {"help": "address to listen on (default 127.0.0.1)"}),
    ("--port", {"type": int, "help": "port (default 8000)"}),
    (
        "--upstream",
        {"help": "upstream URL template, e.g. ws://backend:9000/sessions/{session_id}/ws"},
    ),
    (
        "--upstream-kind",
        {"choices": ["websocket", "openai"], "help": "websocket (default) or openai (HTTP)"},
    ),
    ("--dialect", {"help": "upstream dialect (default agent-ops-v2; see 'chunkbridge dialects')"}),
    (
        "--target",
        {"type": int, "choices": [5, 6, 7], "help": "AI SDK major of the clients (default 5)"},
    ),
    ("--auth", {"choices": ["none", "bearer-forward", "jwt"], "help": "authentication mode"}),
    ("--jwt-key", {"help": "HS256 secret or RS256 public key (PEM)"}),
    ("--jwt-key-file", {"help": "file holding the JWT key"}),
    ("--jwt-issuer", {"help": "required JWT issuer"}),
    ("--jwt-audience", {"help": "required JWT audience"}),
    (
        "--history",
        {"choices": ["latest", "full"], "help": "send the latest user message or the full history"},
    ),
    ("--connect-timeout", {"type": float, "help": "upstream handshake timeout, s"}),
    ("--first-event-timeout", {"type": float, "help": "silence allowed before the first event, s"}),
    ("--idle-timeout", {"type": float, "help": "silence allowed between events, s"}),
    ("--total-timeout", {"type": float, "help": "longest turn, s"}),
    (
        "--keepalive-interval",
        {"type": float, "help": "keep-alive comment after this much silence, s"},
    ),
    (
        "--flush-interval",
        {"type": float, "help": "at most one write per client per this many s (0: no holding)"},
    ),
    ("--drain-timeout", {"type": float, "help": "SIGTERM: seconds streams get to finish"}),
    ("--max-body-bytes", {"type": int, "help": "largest request body"}),
    ("--cors-origins", {"nargs": "*", "help": "allowed browser origins (CORS)"}),
    (
        "--mask-errors",
        {"action": "store_true", "default": None, "help": "hide upstream error texts"},
    ),
    (
        "--on-disconnect",
        {"choices": ["abort", "detach"], "help": "what a client disconnect does upstream"},
    ),
    (
        "--unknown-events",
        {"choices": ["forward", "drop", "error"], "help": "unknown upstream events policy"},
    ),
    ("--max-turns-per-session", {"type": int, "help": "concurrent turns per session (409 beyond)"}),
    ("--openai-model", {"help": "model for upstream-kind openai"}),
    ("--log-level", {"choices": ["debug", "info", "warning", "error"], "help": "log level"}),
    ("--log-format", {"choices": ["json", "console"], "help": "log format"}),
]


def _config_from_args(args: argparse.Namespace, **overrides: object):
    from gateway.config import load_config

    flags = {
        name.lstrip("-").replace("-", "_"): getattr(args, name.lstrip("-").replace("-", "_"))
        for name, _ in _SERVE_FLAGS
    }
    flags.update(overrides)
    return load_config(Path(args.config) if args.config else None, **flags)


def cmd_serve(args: argparse.Namespace) -> int:
    from gateway.app import create_app
    from gateway.config import ConfigError
    from gateway.logging import configure_logging, get_logger
    from gateway.server import run_app

    try:
        config = _config_from_args(args)
    except ConfigError as exc:
        print(f"chunkbridge serve: {exc}", file=sys.stderr)
        return 2
    configure_logging(config.log_level, config.log_format)
    get_logger().info(
        "gateway.start",
        host=config.host,
        port=config.port,
        dialect=config.dialect,
        upstream=config.upstream,
        target=config.target,
        auth=config.auth.value,
    )
    run_app(create_app(config), config.host, config.port, config.log_level)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from gateway.app import create_app
    from gateway.config import load_config
    from gateway.demo import demo_routes
    from gateway.logging import configure_logging
    from gateway.server import run_app
    from gateway.upstreams import DemoUpstream

    upstream = DemoUpstream()

    config = load_config(
        None,
        host=args.host,
        port=args.port,
        upstream="ws://127.0.0.1:1/sessions/{session_id}/ws",
        dialect="agent-ops-v2",
        log_format="console",
        target=args.target,
        cors_origins=args.cors_origins or [],
    )

    async def start_upstream(state) -> None:
        await upstream.start("127.0.0.1", 0)
        state.config = config.model_copy(update={"upstream": upstream.url_template})

    app = create_app(
        config,
        extra_routes=demo_routes(upstream),
        on_startup=start_upstream,
        on_shutdown=upstream.aclose,
    )
    configure_logging("info", "console")
    base = f"http://{config.host}:{config.port}"
    print(f"chunkbridge demo: open {base}/ in a browser", flush=True)
    print(
        f"  chat endpoint  POST {base}/api/sessions/<any-id>/chat  (useChat, ai 5/6/7)", flush=True
    )
    print(f"  health         {base}/healthz   metrics {base}/metrics", flush=True)
    print(
        "  the demo upstream (agent-ops-v2 over WebSocket) listens on 127.0.0.1; Ctrl-C stops",
        flush=True,
    )
    run_app(app, config.host, config.port)
    return 0


def cmd_mock_upstream(args: argparse.Namespace) -> int:
    import asyncio
    import signal

    from gateway.upstreams import RecordingUpstream

    files = [Path(f) for f in args.files]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        print(f"chunkbridge mock-upstream: no such file: {', '.join(missing)}", file=sys.stderr)
        return 2

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

    from gateway.record import record

    try:
        count = asyncio.run(
            record(
                args.upstream,
                args.dialect,
                args.prompt,
                Path(args.output),
                session_id=args.session,
                max_seconds=args.timeout,
            )
        )
    except Exception as exc:  # the CLI reports, it does not trace
        print(f"chunkbridge record: {exc}", file=sys.stderr)
        return 1
    print(f"recorded {count} frames into {args.output}", file=sys.stderr)
    return 0


def register_servers(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    add_target: Callable[[argparse.ArgumentParser], None],
) -> None:
    serve = sub.add_parser(
        "serve",
        help="run the gateway in front of an upstream",
        description="Settings come from --config FILE.toml, then CHUNKBRIDGE_* environment "
        "variables, then these flags (flags win). See the README for every setting.",
    )
    serve.add_argument("--config", help="TOML configuration file")
    for name, options in _SERVE_FLAGS:
        serve.add_argument(name, **options)
    serve.set_defaults(func=cmd_serve)

    demo = sub.add_parser("demo", help="the gateway with a built-in demo upstream and a chat page")
    demo.add_argument("--host", default="127.0.0.1")
    demo.add_argument("--port", type=int, default=8000)
    demo.add_argument("--cors-origins", nargs="*", help="browser origins allowed to call it")
    add_target(demo)
    demo.set_defaults(func=cmd_demo)

    mock = sub.add_parser("mock-upstream", help="serve recorded sessions as a WebSocket upstream")
    mock.add_argument("files", nargs="+", metavar="FILE.jsonl")
    mock.add_argument("--host", default="127.0.0.1")
    mock.add_argument("--port", type=int, default=9000)
    mock.add_argument("--timing", choices=["recorded", "fast"], default="fast")
    mock.set_defaults(func=cmd_mock_upstream)

    rec = sub.add_parser("record", help="record an upstream session's raw frames as .jsonl")
    rec.add_argument("--upstream", required=True, help="URL template or URL of the upstream")
    rec.add_argument("--dialect", required=True)
    rec.add_argument("--prompt", required=True, help="the user message to send")
    rec.add_argument("--session", default="recording", help="session id for {session_id}")
    rec.add_argument("--timeout", type=float, default=300, help="stop after this many seconds")
    rec.add_argument("-o", "--output", required=True, metavar="FILE.jsonl")
    rec.set_defaults(func=cmd_record)
