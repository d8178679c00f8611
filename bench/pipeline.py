#!/usr/bin/env python3
"""Pipeline micro-benchmark: no I/O, one core, best and median of REPEAT runs after a warm-up.

    .venv/bin/python bench/pipeline.py [N]           # N events per run (default 1,000,000)

Variants:
  guard_encode        text-delta chunks -> StreamGuard.feed -> encode_chunks
  <dialect>_text      raw upstream text-delta frames (bytes) -> Turn.encode_frame (orjson
                      parse, translate, guard, encode): what the turn driver runs per frame
  <dialect>_floor     orjson.loads(frame) -> UI dict -> b"data: " + orjson.dumps(d) + b"\n\n",
                      no checks: the least any Python translator can do for the same frames
  agent-ops-v2_mixed  a realistic mix: 1 tool call (3 events) per 20 text deltas

Numbers are per event; compare with the Node AI SDK path measured on the same machine by
``../shared/bench/run.sh micro`` (``sdk_full``), as docs/performance.md does.
Env: REPEAT (3), VARIANTS (comma list), BENCH_JSON=1 prints JSON too.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import orjson  # noqa: E402

from chunkbridge.gateway.registry import get_dialect  # noqa: E402
from chunkbridge.kit import TranslatorOptions  # noqa: E402
from chunkbridge.translators.core.closing import CloseReason, CloseRequest  # noqa: E402
from chunkbridge.translators.core.guard import StreamGuard  # noqa: E402
from chunkbridge.translators.core.sse_codec import encode_chunks  # noqa: E402
from chunkbridge.translators.core.turn import Turn  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else int(os.environ.get("BENCH_N", 1_000_000))
REPEAT = int(os.environ.get("REPEAT", 3))
WARMUP = min(N, 200_000)
POOL = 4096
MASK = POOL - 1
TOKENS = [" the", " quick", " brown", " fox", " jumps", " over", " lazy", " dog", " through"]
TS0 = 1_700_000_000_000_000_000
DELTAS = [f"{TOKENS[i % len(TOKENS)]}«{TS0 + i * 1000}»" for i in range(POOL)]


def _frames(make: Callable[[str], dict]) -> list[bytes]:
    return [json.dumps(make(d), ensure_ascii=False).encode() for d in DELTAS]


TEXT_FRAMES = {
    "agent-ops-v2": (
        [{"type": "message.create", "turnId": "turn_0123456789ab"}],
        _frames(
            lambda d: {
                "type": "message.part.text-delta",
                "turnId": "turn_0123456789ab",
                "delta": d,
                "ts": TS0,
            }
        ),
    ),
    "open-harness": (
        [{"type": "flow:start", "flowName": "bench"}],
        _frames(lambda d: {"type": "agent:text:delta", "content": d, "nodeId": "writer"}),
    ),
    "openai-chat": (
        [],
        _frames(
            lambda d: {
                "id": "chatcmpl-1",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": "m",
                "choices": [{"index": 0, "delta": {"content": d}, "finish_reason": None}],
            }
        ),
    ),
    "anthropic-messages": (
        [
            {"type": "message_start", "message": {"id": "msg_1", "model": "m", "usage": {}}},
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}},
        ],
        _frames(
            lambda d: {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": d},
            }
        ),
    ),
    "openai-responses": (
        [
            {"type": "response.created", "response": {"id": "resp_1", "model": "m"}},
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {"id": "msg_1", "type": "message", "role": "assistant", "content": []},
            },
        ],
        _frames(
            lambda d: {
                "type": "response.output_text.delta",
                "sequence_number": 7,
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "delta": d,
                "logprobs": [],
            }
        ),
    ),
    "gemini": (
        [],
        _frames(
            lambda d: {
                "candidates": [{"content": {"parts": [{"text": d}], "role": "model"}, "index": 0}],
                "usageMetadata": {"promptTokenCount": 9, "totalTokenCount": 9},
                "modelVersion": "gemini-2.5-flash",
                "responseId": "r1",
            }
        ),
    ),
}


def new_turn(dialect: str) -> Turn:
    """A turn of ``dialect`` built as the gateway builds one (default settings, target 5)."""
    description = get_dialect(dialect)
    return Turn(description.translator(TranslatorOptions(settings=description.settings())))


def guard_encode(n: int) -> int:
    guard = StreamGuard()
    total = len(encode_chunks(guard.feed({"type": "text-start", "id": "t"})))
    feed, deltas = guard.feed, DELTAS
    for i in range(n):
        total += len(
            encode_chunks(feed({"type": "text-delta", "id": "t", "delta": deltas[i & MASK]}))
        )
    return total + len(encode_chunks(guard.close(CloseRequest(CloseReason.COMPLETED))))


def dialect_text(dialect: str) -> Callable[[int], int]:
    prelude, frames = TEXT_FRAMES[dialect]

    def run(n: int) -> int:
        turn = new_turn(dialect)
        total = sum(len(encode_chunks(turn.feed(e))) for e in prelude)
        encode_frame = turn.encode_frame
        for i in range(n):
            total += len(encode_frame(frames[i & MASK]))
        return total + len(encode_chunks(turn.upstream_ended()))

    return run


def floor(dialect: str) -> Callable[[int], int]:
    """The Python floor for the same frames: orjson.loads, build the UI dict, the floor encode."""
    _, frames = TEXT_FRAMES[dialect]
    loads, dumps = orjson.loads, orjson.dumps

    def run(n: int) -> int:
        total = 0
        for i in range(n):
            event = loads(frames[i & MASK])
            chunk = {"type": "text-delta", "id": "text-1", "delta": event.get("delta", "")}
            total += len(b"data: " + dumps(chunk) + b"\n\n")
        return total

    return run


def agent_ops_mixed(n: int) -> int:
    prelude, frames = TEXT_FRAMES["agent-ops-v2"]
    turn = new_turn("agent-ops-v2")
    total = sum(len(encode_chunks(turn.feed(e))) for e in prelude)
    tool = [
        json.dumps(
            {
                "type": "message.part.tool-update",
                "turnId": "t",
                "callId": f"c{k}",
                "toolName": "search",
                "status": s,
                "args": {"q": "x"},
                "result": {"n": 1},
            }
        ).encode()
        for k in range(256)
        for s in ("pending", "running", "completed")
    ]
    i = 0
    while i < n:
        for j in range(20):
            total += len(turn.encode_frame(frames[(i + j) & MASK]))
        k = (i // 23) % 256 * 3
        for frame in tool[k : k + 3]:
            total += len(turn.encode_frame(frame))
        i += 23
    return total + len(encode_chunks(turn.upstream_ended()))


VARIANTS: dict[str, Callable[[int], int]] = {
    "guard_encode": guard_encode,
    **{f"{d}_text": dialect_text(d) for d in TEXT_FRAMES},
    **{f"{d}_floor": floor(d) for d in TEXT_FRAMES},
    "agent-ops-v2_mixed": agent_ops_mixed,
}


def bench(name: str, fn: Callable[[int], int]) -> dict:
    fn(WARMUP)
    times = []
    for _ in range(REPEAT):
        t0 = time.perf_counter_ns()
        fn(N)
        times.append(time.perf_counter_ns() - t0)
    best, median = min(times) / N, statistics.median(times) / N
    return {
        "variant": name,
        "n": N,
        "ns_per_event_best": round(best, 1),
        "ns_per_event_median": round(median, 1),
        "events_per_s_best": round(1e9 / best),
    }


def main() -> None:
    selected = os.environ.get("VARIANTS", ",".join(VARIANTS)).split(",")
    results = [bench(name, VARIANTS[name]) for name in selected if name in VARIANTS]
    print(f"python {sys.version.split()[0]}, N={N}, repeat={REPEAT}")
    print(f"{'variant':24} {'ns/event best':>14} {'ns/event median':>16} {'events/s best':>14}")
    for r in results:
        print(
            f"{r['variant']:24} {r['ns_per_event_best']:>14} {r['ns_per_event_median']:>16} "
            f"{r['events_per_s_best']:>14,}"
        )
    if os.environ.get("BENCH_JSON"):
        print(json.dumps(results))


if __name__ == "__main__":
    main()
