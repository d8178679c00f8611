"""resume = redis: two real gateway processes on one real redis-server (started here on 127.0.0.1
in a temporary directory) in front of mock-upstream; the real clients judge the resumed bodies."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import orjson
import pytest

from tests.gateway_harness import free_port, user_body
from tests.helpers import decode_sse, text_of
from tests.test_gateway_process import process

pytestmark = pytest.mark.slow  # long: its file runs first (tests/conftest.py)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

WORDS = 60
EXPECTED = "".join(f"w{i} " for i in range(WORDS))
LEASE = 1.0


def slow_recording(path: Path, pause_ms: int = 40) -> Path:
    lines = [{"type": "message.create", "turnId": "t"}]
    lines += [
        {"type": "message.part.text-delta", "turnId": "t", "delta": f"w{i} "} for i in range(WORDS)
    ]
    lines += [
        {"type": "message.finalize", "turnId": "t", "reason": "end_turn"},
        {"type": "complete"},
    ]
    path.write_text("\n".join(orjson.dumps(x).decode() for x in lines) + "\n")
    path.with_suffix(".jsonl.timing").write_text(
        "\n".join(str(i * pause_ms) for i in range(len(lines)))
    )
    return path


@contextmanager
def two_gateways(
    redis_url: str, recording: Path, *extra: str
) -> Iterator[tuple[str, str, subprocess.Popen[str]]]:
    up_port, a_port, b_port = free_port(), free_port(), free_port()
    common = (
        "--dialect",
        "agent-ops-v2",
        "--upstream",
        f"ws://127.0.0.1:{up_port}/sessions/{{session_id}}/ws",
        "--resume",
        "redis",
        "--redis-url",
        redis_url,
        "--owner-lease",
        str(LEASE),
        "--log-level",
        "warning",
        *extra,
    )
    with ExitStack() as stack:
        stack.enter_context(
            process(
                "mock-upstream",
                "--port",
                str(up_port),
                "--timing",
                "recorded",
                str(recording),
                ready_line="mock upstream:",
            )
        )
        a = stack.enter_context(
            process(
                "serve",
                "--port",
                str(a_port),
                *common,
                ready_url=f"http://127.0.0.1:{a_port}/healthz",
            )
        )
        stack.enter_context(
            process(
                "serve",
                "--port",
                str(b_port),
                *common,
                ready_url=f"http://127.0.0.1:{b_port}/healthz",
            )
        )
        yield f"http://127.0.0.1:{a_port}", f"http://127.0.0.1:{b_port}", a


def drop_after(base: str, session: str, marker: bytes) -> None:
    got = b""
    with httpx.stream(
        "POST",
        f"{base}/api/sessions/{session}/chat",
        json=user_body("hi"),
        timeout=10,
        trust_env=False,
    ) as response:
        for chunk in response.iter_bytes():
            got += chunk
            if marker in got:
                return


def get(base: str, path: str) -> httpx.Response:
    return httpx.get(base + path, timeout=20, trust_env=False)


class Reader(threading.Thread):
    """A resume read of a turn's stream on a thread of its own, to its end; ``attached`` is set
    once its first bytes came (the reader is in: what a test waits for before a stop or a kill)."""

    def __init__(self, base: str, session: str) -> None:
        super().__init__()
        self.url = f"{base}/api/sessions/{session}/chat/chat1/stream"
        self.attached = threading.Event()
        self.body = b""

    def run(self) -> None:
        with httpx.stream("GET", self.url, timeout=20, trust_env=False) as response:
            for chunk in response.iter_bytes():
                self.body += chunk
                self.attached.set()

    def attach(self, seconds: float) -> None:
        """Start it and wait until it is in (at most ``seconds``)."""
        self.start()
        assert self.attached.wait(seconds), "the reader got nothing"


def test_another_instance_resumes_mid_turn_and_after_the_end(
    redis_url: str, tmp_path: Path, real_clients
) -> None:
    recording = slow_recording(tmp_path / "slow.jsonl")
    with two_gateways(redis_url, recording) as (a, b, _):
        reference = httpx.post(
            f"{a}/api/sessions/ref/chat", json=user_body("hi"), timeout=20, trust_env=False
        )
        drop_after(a, "s1", b'"w5 "')
        busy = httpx.post(
            f"{b}/api/sessions/s1/chat", json=user_body("again"), timeout=10, trust_env=False
        )
        readers: list[httpx.Response] = []
        threads = [
            threading.Thread(
                target=lambda: readers.append(get(b, "/api/sessions/s1/chat/chat1/stream"))
            )
            for _ in range(10)
        ]
        for thread in threads:
            thread.start()
        mid = get(b, "/api/sessions/s1/chat/chat1/stream")
        for thread in threads:
            thread.join(30)
        after = get(a, "/api/sessions/s1/chat/chat1/stream")
        none = get(b, "/api/sessions/s1/chat/other/stream")
    assert busy.status_code == 409  # one turn per session, across instances
    assert none.status_code == 204
    expected = real_clients.check(reference.content)
    for response in [mid, after, *readers]:
        assert response.status_code == 200
        assert text_of(decode_sse(response.content)) == EXPECTED
    for major, verdict in real_clients.check(mid.content).items():
        assert verdict.ok and verdict.finish_reason == "stop", (major, verdict.fatal)
        assert verdict.message["parts"] == expected[major].message["parts"], major  # type: ignore[index]


def test_stop_from_the_other_instance_ends_the_turn_for_every_reader(
    redis_url: str, tmp_path: Path, real_clients
) -> None:
    recording = slow_recording(tmp_path / "slow.jsonl", pause_ms=60)
    with two_gateways(redis_url, recording) as (a, b, _):
        drop_after(a, "s2", b'"w2 "')
        reader = Reader(b, "s2")
        reader.attach(10)
        stopped = httpx.post(f"{b}/api/sessions/s2/chat/chat1/stop", timeout=10, trust_env=False)
        reader.join(10)
        again = httpx.post(f"{b}/api/sessions/s2/chat/chat1/stop", timeout=10, trust_env=False)
    assert stopped.status_code == 202 and again.status_code == 204
    text = text_of(decode_sse(reader.body))
    assert text.startswith("w0 w1 w2 ") and len(text) < len(EXPECTED)
    for major, verdict in real_clients.check(reader.body).items():
        assert verdict.ok, (major, verdict.fatal)


def test_a_killed_owner_ends_every_reader_within_the_lease(
    redis_url: str, tmp_path: Path, real_clients
) -> None:
    recording = slow_recording(tmp_path / "slow.jsonl", pause_ms=100)
    with two_gateways(redis_url, recording) as (a, b, owner):
        drop_after(a, "s3", b'"w2 "')
        started = time.monotonic()
        reader = Reader(b, "s3")
        reader.attach(10)
        os.kill(owner.pid, signal.SIGKILL)
        reader.join(LEASE + 5)
        waited = time.monotonic() - started
        free = httpx.post(
            f"{b}/api/sessions/s3/chat", json=user_body("next"), timeout=20, trust_env=False
        )
    assert waited < LEASE + 2 + 0.5
    chunks = decode_sse(reader.body)
    assert chunks[-2]["type"] == "error" and chunks[-1]["type"] == "finish"
    for major, verdict in real_clients.check(reader.body).items():
        assert verdict.ok and verdict.error_text, (major, verdict.fatal)
    assert free.status_code == 200  # the session is free again


def test_redis_going_away_mid_turn_does_not_break_the_owners_own_stream(
    redis_server: tuple[str, subprocess.Popen[bytes]], tmp_path: Path, real_clients
) -> None:
    url, redis = redis_server
    recording = slow_recording(tmp_path / "slow.jsonl", pause_ms=30)
    with two_gateways(url, recording) as (a, _, _):
        body = b""
        with httpx.stream(
            "POST", f"{a}/api/sessions/s4/chat", json=user_body("hi"), timeout=20, trust_env=False
        ) as response:
            for chunk in response.iter_bytes():
                body += chunk
                if b'"w5 "' in body and redis.poll() is None:
                    redis.kill()
        assert text_of(decode_sse(body)) == EXPECTED
        for major, verdict in real_clients.check(body).items():
            assert verdict.ok and verdict.finish_reason == "stop", (major, verdict.fatal)


def test_an_approval_issued_by_one_instance_is_answered_on_the_other_once(
    redis_url: str, tmp_path: Path
) -> None:
    """The approval ledger lives in Redis with resume = redis: any instance takes the answer,
    and two answers sent to both instances at once are taken once (the other gets 409)."""
    recording = tmp_path / "approval.jsonl"
    frames = (FIXTURES / "agent-ops-v2" / "approval-then-wait.jsonl").read_text().splitlines()
    recording.write_text("\n".join(frames) + "\n")
    # the approval comes 1.5 s into each turn: the continuations' re-asks come after the race
    times = [0, 10, 20, 1500, 1510][: len(frames)]
    recording.with_suffix(".jsonl.timing").write_text("\n".join(map(str, times)))
    with two_gateways(redis_url, recording, "--target", "7") as (a, b, _):
        first = httpx.post(
            f"{a}/api/sessions/s1/chat", json=user_body("clean up"), timeout=10, trust_env=False
        )
        chunks = decode_sse(first.content)
        (request,) = [c for c in chunks if c["type"] == "tool-approval-request"]
        message = {
            "id": chunks[0]["messageId"],
            "role": "assistant",
            "parts": [
                {
                    "type": "tool-delete_branch",
                    "toolCallId": request["toolCallId"],
                    "state": "approval-responded",
                    "input": {"branch": "feature/old"},
                    "approval": {"id": request["approvalId"], "approved": True},
                }
            ],
        }
        body = user_body("clean up")
        body["messages"].append(message)

        def answer(base: str, session: str, out: list[int]) -> None:
            url = f"{base}/api/sessions/{session}/chat"
            out.append(httpx.post(url, json=body, timeout=10, trust_env=False).status_code)

        elsewhere: list[int] = []
        answer(b, "s2", elsewhere)
        assert elsewhere == [400]  # another session's approval
        statuses: list[int] = []
        racers = [threading.Thread(target=answer, args=(x, "s1", statuses)) for x in (a, b)]
        for racer in racers:
            racer.start()
        for racer in racers:
            racer.join(15)
        assert sorted(statuses) == [200, 409]  # issued on a, taken once across both
