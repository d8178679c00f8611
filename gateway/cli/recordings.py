"""``record`` and ``mock-upstream``: recorded upstream sessions, made and played back."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from chunkbridge.gateway.cli.flags import SubParsers, add_settings, fail, load_settings
from chunkbridge.gateway.config import ConfigError

__all__ = ["register"]


def cmd_mock_upstream(args: argparse.Namespace) -> int:
    import asyncio
    import signal

    from chunkbridge.gateway.devtools.upstreams import RecordingUpstream, recording_http_app

    files = [Path(f) for f in args.files]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        return fail("mock-upstream", f"no such file: {', '.join(missing)}")
    if args.transport == "http":
        from chunkbridge.gateway.server import run_app

        base = f"http://{args.host}:{args.port}"
        order = ", one after the other" if args.sequence else ""
        print(
            f"mock upstream: {base}/sessions/{{session_id}}/… (any POST) serving "
            f"{len(files)} recording(s){order} as server-sent events, timing {args.timing}",
            flush=True,
        )
        app = recording_http_app(files, args.timing, args.sequence)
        run_app(app, args.host, args.port, "warning")
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

    from chunkbridge.gateway.devtools.record import record

    if not (args.upstream and args.dialect):
        return fail("record", "--upstream and --dialect are required")
    try:
        config = load_settings(args, args.flags).config
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
        return fail("record", exc)
    except Exception as exc:  # the CLI reports, it does not trace
        print(f"chunkbridge record: {exc}", file=sys.stderr)
        return 1
    print(f"recorded {count} frames into {args.output}", file=sys.stderr)
    return 0


def register(sub: SubParsers) -> None:
    """Add ``mock-upstream`` and ``record``."""
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
    mock.add_argument(
        "--sequence",
        action="store_true",
        help="http: each request gets the next file in order (a model's answers to the calls "
        "of an agent loop: step 1 calls tools, step 2 answers)",
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
    rec.set_defaults(func=cmd_record, flags=add_settings(rec))
