"""The client of ``oracle.mjs``: every conformance script runs in one long-lived Node process
per Python process (per pytest worker), not in a process per call.

Node's start-up and the import of three ``ai`` majors are paid once per worker. Isolation is kept
per run, not per process: each request is one call of the script's ``run(input)``, which builds
its own transport, chat and servers.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import json
import os
import queue
import subprocess
import threading
from collections import deque
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

#: How much of the oracle's stderr an error message quotes (its last characters).
STDERR_TAIL_CHARS = 4000
_STDERR_LINES = 400


class OracleError(RuntimeError):
    """A script's run failed, did not answer in time, or the oracle process died under it."""


class _OracleProcess:
    """One running ``node oracle.mjs``: requests go in on stdin, answers come back by id.

    Three daemon threads: a writer (so a caller's timeout also covers a Node process that stopped
    reading), a reader that resolves each request's future from its answer and, at end of file,
    reaps the process and fails whatever is still pending, and a stderr drain that keeps a bounded
    tail for error messages (an undrained pipe would block Node once full)."""

    def __init__(self, command: tuple[str, ...]) -> None:
        self.proc = subprocess.Popen(
            command,
            cwd=HERE,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "NODE_NO_WARNINGS": "1"},
        )
        self._lock = threading.Lock()
        self._pending: dict[int, tuple[str, Future[Any]]] = {}
        self._closed: str | None = None  # why, once no request can be answered any more
        self._stderr: deque[str] = deque(maxlen=_STDERR_LINES)
        self._outbox: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        pid = self.proc.pid
        self._stderr_thread = self._thread(self._drain_stderr, f"oracle-{pid}-stderr")
        self._writer = self._thread(self._write, f"oracle-{pid}-writer")
        self._reader = self._thread(self._read, f"oracle-{pid}-reader")

    @staticmethod
    def _thread(target: Any, name: str) -> threading.Thread:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        return thread

    @property
    def closed(self) -> bool:
        return self._closed is not None

    def stderr_tail(self) -> str:
        tail = "".join(self._stderr)[-STDERR_TAIL_CHARS:]
        return tail.strip() or "(nothing on stderr)"

    def _error(self, what: str) -> OracleError:
        return OracleError(f"{what}\n--- the Node oracle's stderr (tail) ---\n{self.stderr_tail()}")

    def request(self, request_id: int, script: str, payload: Any, timeout: float) -> Any:
        line = json.dumps({"id": request_id, "script": script, "input": payload}) + "\n"
        future: Future[Any] = Future()
        with self._lock:
            if self._closed is not None:
                raise self._error(f"{script}: the Node oracle is closed ({self._closed})")
            self._pending[request_id] = (script, future)
        self._outbox.put(line.encode())
        try:
            return future.result(timeout)
        except FutureTimeout:
            with self._lock:
                mine = self._pending.pop(request_id, None)
            if mine is None:  # answered (or failed) just now
                return future.result(0)
            self.kill(f"{script} did not answer within {timeout} s")
            raise self._error(
                f"{script} did not answer within {timeout} s: the Node oracle was killed "
                "(the next request starts a fresh one)"
            ) from None

    def _write(self) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        try:
            while (line := self._outbox.get()) is not None:
                stdin.write(line)
                stdin.flush()
        except (OSError, ValueError):
            pass  # the process is gone: the reader fails what is pending
        finally:
            with contextlib.suppress(OSError, ValueError):
                stdin.close()  # end of input: the oracle exits

    def _read(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        with stdout:
            self._answer(stdout)
        code = self.proc.wait()
        self._outbox.put(None)  # the writer's end
        self._stderr_thread.join(5)  # the crash's own words, before quoting them
        with self._lock:
            self._closed = self._closed or f"it exited with code {code}"
            pending, self._pending = self._pending, {}
            reason = self._closed
        for script, future in pending.values():
            died = f"{script}: the Node oracle died mid-request ({reason})"
            future.set_exception(self._error(died))

    def _answer(self, stdout: Any) -> None:
        for raw in stdout:
            try:
                answer = json.loads(raw)
                request_id = answer["id"]
            except (ValueError, TypeError, KeyError):
                self._stderr.append(f"[oracle stdout, not an answer] {raw[:300]!r}\n")
                continue
            with self._lock:
                entry = self._pending.pop(request_id, None)
            if entry is None:
                continue  # its caller gave up (timed out)
            script, future = entry
            if "error" in answer:
                future.set_exception(self._error(f"{script} failed: {answer['error']}"))
            else:
                future.set_result(answer.get("output"))

    def _drain_stderr(self) -> None:
        stderr = self.proc.stderr
        assert stderr is not None
        with stderr:
            for raw in stderr:
                self._stderr.append(raw[:2000].decode(errors="replace"))

    def kill(self, reason: str) -> None:
        """Kill the process now; the reader fails the other pending requests with ``reason``."""
        with self._lock:
            self._closed = self._closed or f"killed: {reason}"
        self._outbox.put(None)
        with contextlib.suppress(OSError):
            self.proc.kill()
        self._finish()

    def close(self, grace: float = 5) -> None:
        """End of input, then a little time to exit before a kill; reaped either way."""
        with self._lock:
            self._closed = self._closed or "closed"
        self._outbox.put(None)
        try:
            self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            self.kill("did not exit at close")
        self._finish()

    def _finish(self) -> None:
        """Reaped, its pipes closed and its threads done (bounded: a stuck thread is a daemon)."""
        self.proc.wait()
        for thread in (self._reader, self._writer, self._stderr_thread):
            if thread is not threading.current_thread():
                thread.join(5)


class Oracle:
    """The client of one long-lived ``oracle.mjs``, shared by every thread of this process.

    Why one process: starting Node and importing ai 5, 6 and 7 costs ~0.3 s of CPU, once per call
    when each call was a process of its own, so hundreds of times per suite. Why per Python
    process: pytest-xdist's workers each get their own (started on first use), so none waits on
    another's runs. Requests are multiplexed by id: callers on several threads (``RealClients.
    chat_loop`` runs in ``asyncio.to_thread``) each wait on their own answer. A request that times
    out kills the process (what it was running cannot be interrupted from here), failing what
    else was pending; the next request starts a fresh one. The process is closed at exit."""

    def __init__(self, command: tuple[str, ...] = ("node", "oracle.mjs")) -> None:
        self.command = command  # run in tests/conformance; another command stands in, in tests
        self._lock = threading.Lock()
        self._process: _OracleProcess | None = None
        self._ids = itertools.count(1)
        self._owner = os.getpid()
        atexit.register(self.close)

    def request(self, script: str, payload: Any, timeout: float) -> Any:
        with self._lock:
            if self._process is None or self._process.closed:
                self._process = _OracleProcess(self.command)
            process = self._process
            request_id = next(self._ids)
        return process.request(request_id, script, payload, timeout)

    @property
    def pid(self) -> int | None:
        """The running process's id (``None`` before the first request and after a close)."""
        process = self._process
        return None if process is None or process.closed else process.proc.pid

    def close(self) -> None:
        if os.getpid() != self._owner:
            return  # a forked child's copy: the process is its parent's
        with self._lock:
            process, self._process = self._process, None
        if process is not None:
            process.close()


_oracle: Oracle | None = None
_oracle_lock = threading.Lock()


def oracle() -> Oracle:
    """This process's :class:`Oracle` (a forked child makes its own)."""
    global _oracle
    with _oracle_lock:
        if _oracle is None or _oracle._owner != os.getpid():
            _oracle = Oracle()
        return _oracle
