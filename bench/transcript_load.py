"""Loading a long stored chat: ``GET …/chat/{id}/messages`` of a 1,000-message chat through a
real ``chunkbridge serve`` process, p50/p99 over sequential requests (loopback only).

    .venv/bin/python bench/transcript_load.py sqlite
    .venv/bin/python bench/transcript_load.py postgres postgresql://cb@127.0.0.1:5432/chunkbridge

The chat is written once through the store itself (500 questions, 500 answers of about 1.5 KB
with a reasoning part and a tool call each: about 1 MB of JSON), then read ``--requests``
times after ``--warmup`` reads.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from chunkbridge.gateway.stores.base import Put
from chunkbridge.gateway.stores.transcript_sql import SqlTranscriptStore

KEY = ("bench", "long-chat")


def question(i: int) -> dict[str, Any]:
    text = f"Question {i}: how does the gateway keep a conversation across a reload?"
    return {"id": f"u{i}", "role": "user", "parts": [{"type": "text", "text": text}]}


def answer(i: int) -> dict[str, Any]:
    words = " ".join(f"word{j}" for j in range(150))
    return {
        "id": f"a{i}",
        "role": "assistant",
        "metadata": {"model": "m", "turn": i},
        "parts": [
            {"type": "step-start"},
            {"type": "reasoning", "text": "Thinking about it. " * 5, "state": "done"},
            {
                "type": "tool-search_docs",
                "toolCallId": f"call_{i}",
                "state": "output-available",
                "input": {"query": f"question {i}"},
                "output": {"matches": 3, "top": "README.md#stored-chats"},
            },
            {"type": "step-start"},
            {"type": "text", "text": words, "state": "done"},
        ],
    }


async def fill(database: Any, messages: int) -> int:
    store = SqlTranscriptStore(database, lambda *a: None)
    await store.start()
    await store.delete(KEY)
    puts = []
    for i in range(messages // 2):
        puts += [Put(KEY, question(i), "done", 5, title="bench"), Put(KEY, answer(i), "done", 5)]
    await store.put_many(puts)
    size = sum(len(json.dumps(p.message)) for p in puts)
    await store.aclose()
    return size


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store", choices=["sqlite", "postgres"])
    parser.add_argument("url", nargs="?", help="store = postgres: its URL")
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="chunkbridge-load-"))
    if args.store == "sqlite":
        from chunkbridge.gateway.stores.sqlite import SqliteDatabase

        path = work / "chats.sqlite3"
        database: Any = SqliteDatabase(path)
        flags = ["--store", "sqlite", "--store-path", str(path)]
    else:
        from chunkbridge.gateway.stores.postgres import PostgresDatabase

        if not args.url:
            parser.error("store = postgres needs its URL")
        database = PostgresDatabase(args.url)
        flags = ["--store", "postgres", "--store-url", args.url]
    size = asyncio.run(fill(database, args.messages))
    port = free_port()
    command = [sys.executable, "-m", "chunkbridge", "serve", "--dialect", "agent-ops-v2"]
    command += ["--upstream", "ws://127.0.0.1:1/sessions/{session_id}/ws", "--port", str(port)]
    command += ["--log-level", "warning", *flags]
    gateway = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/api/sessions/{KEY[0]}/chat/{KEY[1]}/messages"
    try:
        with httpx.Client(timeout=30, trust_env=False) as client:
            for _ in range(200):  # bounded: 20 s for the gateway to listen
                try:
                    client.get(f"http://127.0.0.1:{port}/healthz")
                    break
                except httpx.TransportError:
                    time.sleep(0.1)
            timings = []
            for i in range(args.warmup + args.requests):
                started = time.perf_counter()
                response = client.get(url)
                elapsed = (time.perf_counter() - started) * 1000
                assert response.status_code == 200 and len(response.json()) == args.messages
                if i >= args.warmup:
                    timings.append(elapsed)
            body = len(response.content)
    finally:
        gateway.terminate()
        gateway.wait(10)
    print(
        f"store = {args.store}: {args.messages} messages ({size / 1e6:.2f} MB stored, "
        f"{body / 1e6:.2f} MB served), {args.requests} loads: p50 "
        f"{statistics.median(timings):.1f} ms, p99 {percentile(timings, 0.99):.1f} ms, "
        f"max {max(timings):.1f} ms"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
