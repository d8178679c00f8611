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
