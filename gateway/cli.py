"""``chunkbridge`` command line: validate, replay, dialects, serve, demo, mock-upstream, record.

Every subcommand is a function ``(args) -> exit code``; :func:`main` takes ``argv`` so tests call
it in-process. Exit codes: 0 success, 1 the checked thing is wrong (invalid stream, golden differs),
2 usage errors (argparse's own convention; unreadable files included).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chunkbridge.protocol_specs.ui_message_stream import ALL_MAJORS, DEFAULT_TARGET

__all__ = ["main", "build_parser"]


def _target(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--target",
        type=int,
        choices=ALL_MAJORS,
        default=DEFAULT_TARGET,
        help=f"AI SDK major of the client (default {DEFAULT_TARGET}: accepted by 5, 6 and 7)",
    )


def _read_input(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    return Path(path).read_bytes()


def _continued(path: str) -> tuple[str, list[Any]]:
    """The id and the tool parts of the assistant message a body continues (a UIMessage JSON
    file, e.g. the previous response's message as the client holds it)."""
    from chunkbridge.kit import TurnInput
    from chunkbridge.protocol_specs.chat_request import ChatRequest

    message = json.loads(Path(path).read_text())
    if not isinstance(message, dict) or message.get("role") != "assistant":
        raise ValueError("not an assistant UIMessage")
    request = ChatRequest.model_validate({"messages": [message]})
    return str(message.get("id") or ""), TurnInput(request, "", "").known_tool_calls()


def cmd_validate(args: argparse.Namespace) -> int:
    from chunkbridge.translators.core.validator import validate_sse

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
    report = validate_sse(body, args.target, continued_message_id=message_id, known_tools=known)
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
    print(f"{name}: {verdict} by ai {args.target} ({report.chunks} chunks{reason}{ending})")
    return 0 if report.ok else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chunkbridge",
        description="Translate agent backend streams into AI SDK UI message streams (ai 5/6/7).",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    validate = sub.add_parser(
        "validate",
        help="check an SSE body against a real AI SDK client's rules",
        description="Exit 0 when the client of that major would process the whole body without "
        "throwing (an error chunk is a legitimate ending), 1 with line-numbered reasons when it "
        "would not, 2 on usage errors. Risky but tolerated things are printed as warnings.",
    )
    validate.add_argument("file", metavar="FILE.sse", help="SSE body to check, or - for stdin")
    _target(validate)
    validate.add_argument("--json", action="store_true", help="print the report as JSON")
    validate.add_argument(
        "--continues",
        metavar="MESSAGE.json",
        help="the assistant UIMessage the body continues (a continuation after a tool output "
        "or an approval): its tool parts may be referred to",
    )
    validate.add_argument("-q", "--quiet", action="store_true", help="do not print warnings")
    validate.set_defaults(func=cmd_validate)

    from chunkbridge.gateway import cli_commands

    cli_commands.register(sub, _target)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
