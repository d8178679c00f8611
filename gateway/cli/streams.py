"""``validate`` and ``replay``: the stream files, checked and made offline (no network)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from chunkbridge.gateway.cli.flags import SubParsers, add_target, fail, target_problem

__all__ = ["register"]


def _read_input(path: str) -> bytes:
    """The file's bytes, or stdin's for ``-``."""
    if path == "-":
        return sys.stdin.buffer.read()
    return Path(path).read_bytes()


def _continued(path: str) -> tuple[str, list[Any]]:
    """The id and the tool parts of the assistant message a body continues (a UIMessage JSON
    file, e.g. the previous response's message as the client holds it)."""
    from chunkbridge.gateway.devtools.replay import continued_tools

    message = json.loads(Path(path).read_text())
    known = continued_tools(message)  # ValueError unless an assistant UIMessage
    return str(message.get("id") or ""), known


def cmd_validate(args: argparse.Namespace) -> int:
    from chunkbridge.translators.core.validator import validate_sse

    problem = target_problem(args)
    if problem is not None:
        return fail("validate", problem)
    try:
        body = _read_input(args.file)
    except OSError as exc:
        print(f"chunkbridge validate: cannot read {args.file}: {exc.strerror}", file=sys.stderr)
        return 2
    message_id = ""
    known: list[Any] = []
    if args.continues:
        try:
            message_id, known = _continued(args.continues)
        except (OSError, ValueError) as exc:
            print(f"chunkbridge validate: --continues {args.continues}: {exc}", file=sys.stderr)
            return 2
    report = validate_sse(
        body,
        args.target,
        continued_message_id=message_id,
        known_tools=known,
        reset_step=args.reset_step,
    )
    if args.json:
        import orjson

        sys.stdout.write(orjson.dumps(report.as_dict()).decode() + "\n")
        return 0 if report.ok else 1
    name = "stdin" if args.file == "-" else args.file
    for finding in report.errors:
        print(f"{name}: error: {finding}")
    if not args.quiet:
        for finding in report.warnings:
            print(f"{name}: warning: {finding}")
    verdict = "accepted" if report.ok else "REJECTED"
    ending = f", ends with error {report.error_text!r}" if report.error_text is not None else ""
    reason = f", finishReason {report.finish_reason}" if report.finish_reason else ""
    client = f"ai {args.target}" + (" with reset-step" if args.reset_step else "")
    print(f"{name}: {verdict} by {client} ({report.chunks} chunks{reason}{ending})")
    return 0 if report.ok else 1


def cmd_replay(args: argparse.Namespace) -> int:
    from chunkbridge.gateway.devtools.recordings import frames_of
    from chunkbridge.gateway.devtools.replay import golden_diff, replay_frames
    from chunkbridge.gateway.registry import UnknownDialect, get_dialect
    from chunkbridge.kit import UnknownEventPolicy

    problem = target_problem(args)
    if problem is not None:
        return fail("replay", problem)
    try:
        get_dialect(args.dialect)
    except UnknownDialect as exc:
        return fail("replay", exc)
    try:
        raw = _read_input(args.file)
    except OSError as exc:
        return fail("replay", f"cannot read {args.file}: {exc.strerror}")
    output = replay_frames(
        args.dialect,
        frames_of(raw.decode("utf-8", "surrogateescape")),
        target=args.target,
        reset_step=args.reset_step,
        unknown_events=UnknownEventPolicy(args.unknown_events),
    )
    if args.update:
        if not args.check:
            return fail("replay", "--update needs --check GOLDEN.sse")
        Path(args.check).write_bytes(output)
        print(f"wrote {args.check}", file=sys.stderr)
        return 0
    if args.check:
        try:
            expected = Path(args.check).read_bytes()
        except OSError as exc:
            return fail("replay", f"cannot read {args.check}: {exc.strerror}")
        diff = golden_diff(expected, output, args.check)
        if diff:
            sys.stdout.write(diff)
            return 1
        return 0
    sys.stdout.buffer.write(output)
    return 0


def register(sub: SubParsers) -> None:
    """Add ``validate`` and ``replay``."""
    validate = sub.add_parser(
        "validate",
        help="check an SSE body against a real AI SDK client's rules",
        description="Exit 0 when the client of that major would process the whole body without "
        "throwing (an error chunk is a legitimate ending), 1 with line-numbered reasons when it "
        "would not, 2 on usage errors. Risky but tolerated things are printed as warnings.",
    )
    validate.add_argument("file", metavar="FILE.sse", help="SSE body to check, or - for stdin")
    add_target(validate)
    validate.add_argument("--json", action="store_true", help="print the report as JSON")
    validate.add_argument(
        "--continues",
        metavar="MESSAGE.json",
        help="the assistant UIMessage the body continues (a continuation after a tool output "
        "or an approval): its tool parts may be referred to",
    )
    validate.add_argument("-q", "--quiet", action="store_true", help="do not print warnings")
    validate.set_defaults(func=cmd_validate)

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
