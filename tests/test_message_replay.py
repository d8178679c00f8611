"""A continued message replayed as chunks: the client that resumes a continuation on a fresh
page builds the message the live client had (ai 5, 6 and 7, real clients)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from chunkbridge.translators.core.message_replay import replay_chunks
from chunkbridge.translators.core.sse_codec import encode_chunks
from tests.conformance.harness import run_cases
from tests.test_message_assembly import GOLDENS, _continuation, assembled


def _replayed(message: dict[str, Any], major: int) -> bytes:
    # in a resume log the turn's own ``start`` (same message id) follows the replay
    own_start = {"type": "start", "messageId": message["id"]}
    return encode_chunks([*replay_chunks(message, major), own_start])


def _messages(rng: random.Random) -> list[tuple[str, bytes]]:
    """Every golden whole and cut at one random event."""
    bodies = []
    for path in GOLDENS:
        body = path.read_bytes()
        events = [e for e in body.split(b"\n\n") if e.strip()]
        cut = rng.randrange(1, len(events) + 1)
        bodies += [(str(path), body), (f"{path}[:{cut}]", b"\n\n".join(events[:cut]) + b"\n\n")]
    return bodies


@pytest.mark.parametrize("major", [5, 6, 7])
def test_the_replay_of_every_golden_message_assembles_back_to_it(major: int) -> None:
    compared = 0
    for name, body in _messages(random.Random(major)):
        message = assembled(body, major)
        if message is None:
            continue
        assert assembled(_replayed(message, major), major) == message, name
        compared += 1
    assert compared > 300


def _answered(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` as the client has it after answering its open tool calls (addToolOutput)."""
    answered = json.loads(json.dumps(message))
    for part in answered["parts"]:
        if part["type"].startswith("tool-") and part.get("state") == "input-available":
            part.update(state="output-available", output={"answer": "green"})
    return answered


@pytest.mark.conformance
def test_a_continuation_resumed_on_a_fresh_page_shows_the_whole_message(real_clients) -> None:
    # live: the client continues the message it has; resumed: a fresh client reads the replay of
    # that message, then the same continuation — both must end with the same message
    cases, resumed = [], []
    finals = run_cases([{"body": p.read_bytes()} for p in GOLDENS])
    for path, verdicts in zip(GOLDENS, finals, strict=True):
        for major in (5, 6, 7):
            message = verdicts[major].message
            body = _continuation(message) if message else None
            if body is None:
                continue
            for continued in (message, _answered(message)):
                name = f"{path}@{major}+continued"
                cases.append({"name": name, "body": body, "message": continued, "majors": (major,)})
                replay = _replayed(continued, major) + body
                resumed.append({"name": name, "body": replay, "majors": (major,)})
    assert len(cases) >= 30
    for case, live, fresh in zip(cases, run_cases(cases), run_cases(resumed), strict=True):
        (major,) = case["majors"]
        assert live[major].ok and fresh[major].ok, (case["name"], fresh[major].fatal)
        assert fresh[major].message == live[major].message, case["name"]
