"""A throwaway redis-server for tests: Debian's binary on 127.0.0.1, its files in a temporary
directory, nothing saved."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

__all__ = ["flush_redis", "redis_binary", "running_redis"]


def redis_binary() -> str | None:
    return shutil.which("redis-server")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def running_redis(directory: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """Start a server; yield (its URL, its process — a test may kill it)."""
    binary = redis_binary()
    assert binary is not None
    port = _free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(directory)]
        + ["--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0", proc
    finally:
        if proc.poll() is None:
            proc.terminate()
        proc.wait(10)


def flush_redis(url: str) -> None:
    """Empty every database of the server at ``url`` (what a test before left behind)."""
    import redis

    with redis.Redis.from_url(url) as client:
        client.flushall()
