"""The client of the long-lived Node oracle (``tests/conformance/oracle.mjs``): requests from many
threads share one process and each gets its own answer; a failing run, a timed-out request and a
crash each fail clearly (naming the script, quoting Node's stderr), and the last two leave no
process behind: the next request starts a fresh one."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests import components
from tests.conformance.harness import RealClients, run_cases
from tests.conformance.oracle import Oracle, OracleError

pytestmark = pytest.mark.conformance


def text_body(text: str) -> bytes:
    chunks = [
        '{"type":"start"}',
        '{"type":"text-start","id":"t"}',
        f'{{"type":"text-delta","id":"t","delta":"{text}"}}',
        '{"type":"text-end","id":"t"}',
        '{"type":"finish","finishReason":"stop"}',
    ]
    return "".join(f"data: {c}\n\n" for c in chunks).encode()


def check_case(text: str) -> list[dict[str, Any]]:
    """What ``run_cases`` sends check.mjs for one body, ai 7 only."""
    return [{"id": "0", "body": text_body(text).decode(), "majors": [7]}]


def text_of(output: list[dict[str, Any]]) -> str:
    parts = output[0]["results"]["7"]["message"]["parts"]
    return "".join(p.get("text", "") for p in parts)


def gone(pid: int) -> bool:
    """Neither running nor a zombie: reaped."""
    return not Path(f"/proc/{pid}").exists()


@pytest.fixture
def oracle(real_clients: RealClients) -> Iterator[Oracle]:
    """An oracle of this test's own (the worker's shared one is left alone)."""
    own = Oracle()
    yield own
    own.close()


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections (the kernel's backlog) and never answers."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield server.getsockname()[1]


def test_a_body_a_client_rejects_is_a_failing_verdict(
    real_clients: RealClients, request: pytest.FixtureRequest
) -> None:
    """Through the worker's shared oracle, counted as a use of the real AI SDK."""
    (verdicts,) = run_cases([{"body": b'data: {"type":"no-such-chunk"}\n\n'}])
    for major, verdict in verdicts.items():
        assert not verdict.ok and verdict.fatal is not None, major
        assert "TypeValidationError" in verdict.fatal, (major, verdict.fatal)
    assert (components.PROPERTY, "ai-sdk") in request.node.user_properties


def test_requests_from_threads_share_one_process_and_get_their_own_answers(
    oracle: Oracle,
) -> None:
    """A chat loop waits on a live server while checks from other threads come and go."""
    release = threading.Event()

    class Slow(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["content-length"]))
            release.wait(30)
            body = text_body("slow")
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    try:
        api = f"http://127.0.0.1:{server.server_address[1]}/api/chat"
        chat = {"api": api, "major": 7, "text": "hi", "answers": []}
        with ThreadPoolExecutor(9) as pool:
            slow = pool.submit(oracle.request, "chat_loop.mjs", chat, 60)
            texts = [f"answer-{n}" for n in range(16)]
            checks = [pool.submit(oracle.request, "check.mjs", check_case(t), 60) for t in texts]
            assert [text_of(c.result(60)) for c in checks] == texts
            assert not slow.done()  # the checks did not wait behind it
            pid = oracle.pid
            release.set()
            loop = slow.result(60)
        assert loop["error"] is None and loop["messages"][-1]["parts"][-1]["text"] == "slow"
        assert oracle.pid == pid
    finally:
        release.set()
        server.shutdown()
        server.server_close()


def test_a_run_that_throws_fails_its_request_only(oracle: Oracle) -> None:
    refused = {"api": "http://127.0.0.1:9/api/chat", "major": 7, "text": "hi"}
    answers = [{"kind": "question", "output": "yes"}]
    with pytest.raises(OracleError, match=r"chat_loop\.mjs failed: Error: nothing to answer"):
        oracle.request("chat_loop.mjs", {**refused, "answers": answers}, 60)
    pid = oracle.pid
    assert text_of(oracle.request("check.mjs", check_case("after"), 60)) == "after"
    assert oracle.pid == pid


def test_a_timed_out_request_kills_the_process_and_the_next_starts_afresh(
    oracle: Oracle, silent_port: int
) -> None:
    assert text_of(oracle.request("check.mjs", check_case("before"), 60)) == "before"
    first = oracle.pid
    assert first is not None
    hang = {"api": f"http://127.0.0.1:{silent_port}/api/chat", "major": 7, "text": "hi"}
    with ThreadPoolExecutor(1) as pool:
        # A request pending beside it fails as soon as the process is killed, not at its timeout.
        beside = pool.submit(oracle.request, "chat_loop.mjs", {**hang, "answers": []}, 120)
        with pytest.raises(OracleError, match=r"chat_loop\.mjs did not answer within 1\.5 s"):
            oracle.request("chat_loop.mjs", {**hang, "answers": []}, 1.5)
        with pytest.raises(OracleError, match="died mid-request .killed: chat_loop.mjs did not"):
            beside.result(30)
    assert oracle.pid is None and gone(first)
    assert text_of(oracle.request("check.mjs", check_case("after"), 60)) == "after"
    assert oracle.pid not in (None, first)


def test_a_crash_fails_what_was_pending_with_the_stderr_tail(real_clients: RealClients) -> None:
    crashing = Oracle(
        (
            "node",
            "-e",
            "process.stderr.write('stand-in: about to crash\\n');"
            "process.stdin.once('data', () => { throw new Error('stand-in crashed'); });",
        )
    )
    try:
        with pytest.raises(OracleError) as failure:
            crashing.request("check.mjs", [], 30)
        message = str(failure.value)
        assert "check.mjs: the Node oracle died mid-request (it exited with code 1)" in message
        assert "stand-in: about to crash" in message and "Error: stand-in crashed" in message
    finally:
        crashing.close()


def test_close_lets_the_process_exit_on_its_own(oracle: Oracle) -> None:
    oracle.request("check.mjs", check_case("x"), 60)
    process = oracle._process
    assert process is not None
    oracle.close()
    assert process.proc.returncode == 0 and gone(process.proc.pid)
    assert oracle.pid is None
