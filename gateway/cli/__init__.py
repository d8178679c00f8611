"""``chunkbridge`` command line: validate, replay, dialects, serve, demo, mock-upstream, record.

One module per concern: :mod:`~chunkbridge.gateway.cli.streams` (validate, replay: stream files,
offline), :mod:`~chunkbridge.gateway.cli.serve` (serve, dialects),
:mod:`~chunkbridge.gateway.cli.demo` and :mod:`~chunkbridge.gateway.cli.recordings` (record,
mock-upstream); settings become flags in
:mod:`~chunkbridge.gateway.cli.flags`. Every subcommand is a function ``(args) -> exit code``;
:func:`main` takes ``argv`` so tests call it in-process. Exit codes: 0 success, 1 the checked
thing is wrong (invalid stream, golden differs), 2 usage errors (argparse's own convention;
unreadable files included).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from chunkbridge.gateway.cli.demo import register as add_demo_command
from chunkbridge.gateway.cli.recordings import register as add_recording_commands
from chunkbridge.gateway.cli.serve import register as add_serving_commands
from chunkbridge.gateway.cli.streams import register as add_stream_commands

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chunkbridge",
        description="Translate agent backend streams into AI SDK UI message streams (ai 5/6/7).",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    add_stream_commands(sub)
    add_serving_commands(sub)
    add_demo_command(sub)
    add_recording_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
