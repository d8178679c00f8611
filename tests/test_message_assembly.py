"""The assistant message the gateway assembles is the real client's final message: every golden
(and its target 6 and 7 replays), cut short anywhere, and continued, through ai 5, 6 and 7."""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest

from chunkbridge.gateway.devtools.recordings import read_frames
from chunkbridge.gateway.devtools.replay import replay_file, run_without_waiting
from chunkbridge.gateway.registry import get_dialect
from chunkbridge.gateway.transports.replay import ReplayUpstream
from chunkbridge.gateway.turn.driver import REPLAY_SETTINGS, TurnDriver
from chunkbridge.kit import TranslatorOptions
from chunkbridge.translators.core.message_assembly import MessageAssembler, merge_metadata
from chunkbridge.translators.core.partial_json import MISSING, parse_partial_json
from chunkbridge.translators.core.sse_codec import json_safe
from chunkbridge.translators.core.turn import Turn, TurnOptions
from tests.conformance.harness import HERE as CONFORMANCE
from tests.conformance.harness import run_cases

ROOT = Path(__file__).resolve().parents[1]
#: The gateway's own output: every dialect's goldens, the toy dialects', the recorded sessions.
#: (fixtures/ui-stream holds hand-written SSE for the client's parser — not what we write.)
GOLDENS = sorted(
    p
    for p in [*(ROOT / "fixtures").rglob("*.sse"), *(ROOT / "tests").rglob("*.sse")]
    if "ui-stream" not in p.parts
)
RECORDINGS = sorted(
    p
    for p in (ROOT / "fixtures").glob("*/*.jsonl")
    if p.parent.name not in ("recorded", "ui-stream")
)


def assembled(body: bytes, major: int, continued: dict[str, Any] | None = None) -> Any:
    assembler = MessageAssembler(major, continued)
    assembler.feed_sse([body])
    return json.loads(json.dumps(assembler.message))


def compare(cases: list[dict[str, Any]]) -> int:
    """Run the cases through the real clients; assert the assembled message of each major
    equals the client's; the number of (case, major) pairs compared."""
    compared = 0
    for case, verdicts in zip(cases, run_cases(cases), strict=True):
        for major in case.get("majors", (5, 6, 7)):
            verdict = verdicts[major]
            assert verdict.ok, (case["name"], major, verdict.fatal)
            mine = assembled(case["body"], major, case.get("message"))
            assert mine == verdict.message, (case["name"], major)
            compared += 1
    return compared


def test_goldens_exist() -> None:
    assert len(GOLDENS) > 150
    assert len(RECORDINGS) >= 96


@pytest.mark.conformance
def test_every_golden_and_replay_assembles_as_the_real_clients(real_clients) -> None:
    cases = [{"name": str(p), "body": p.read_bytes()} for p in GOLDENS]
    for recording in RECORDINGS:
        for target in (6, 7):
            body = replay_file(recording.parent.name, recording, target=target)
            cases.append({"name": f"{recording}@{target}", "body": body, "majors": (target,)})
    assert compare(cases) > 3 * len(GOLDENS)


@pytest.mark.conformance
def test_streams_cut_anywhere_assemble_as_the_real_clients(real_clients) -> None:
    # an abort, a lost connection, a stop: the client keeps what it had; so does the store
    rng = random.Random(25)
    cases = []
    for path in GOLDENS:
        events = [e for e in path.read_bytes().split(b"\n\n") if e.strip()]
        for cut in sorted({rng.randrange(1, len(events) + 1) for _ in range(3)}):
            body = b"\n\n".join(events[:cut]) + b"\n\n"
            cases.append({"name": f"{path}[:{cut}]", "body": body})
    assert compare(cases) > 2 * len(cases)


def _continuation(message: dict[str, Any]) -> bytes | None:
    """A continuation of ``message`` answering its open tool calls (as a gateway sends one)."""
    calls = [
        p["toolCallId"]
        for p in message["parts"]
        if p["type"].startswith("tool-") and p.get("state") == "input-available"
    ]
    if not calls:
        return None
    chunks: list[dict[str, Any]] = [
        {"type": "start", "messageId": message["id"]},
        {"type": "start-step"},
    ]
    chunks += [
        {"type": "tool-output-available", "toolCallId": c, "output": {"ok": 1}} for c in calls
    ]
    chunks += [
        {"type": "text-start", "id": "c1"},
        {"type": "text-delta", "id": "c1", "delta": "after the tools"},
        {"type": "text-end", "id": "c1"},
        {"type": "finish-step"},
        {"type": "finish", "messageMetadata": {"continued": True}},
    ]
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)


@pytest.mark.conformance
def test_continuations_assemble_onto_the_continued_message(real_clients) -> None:
    finals = run_cases([{"body": p.read_bytes(), "majors": (5,)} for p in GOLDENS])
    cases = []
    for path, verdicts in zip(GOLDENS, finals, strict=True):
        message = verdicts[5].message
        body = _continuation(message) if message else None
        if body is not None:
            cases.append({"name": f"{path}+continued", "body": body, "message": message})
    assert len(cases) >= 10
    compare(cases)


_PARSE = """
import { parsePartialJson } from "ai7";
const out = [];
for (const text of JSON.parse(process.argv[1])) {
  out.push((await parsePartialJson(text)).value ?? null);
}
console.log(JSON.stringify(out));
"""


@pytest.mark.conformance
def test_partial_tool_input_is_read_as_the_client_reads_it(real_clients) -> None:
    full = '{"query": "caf\\u00e9 \\"x\\"", "n": -12.5e3, "ok": true, "none": null, "xs": [1, [2]]}'
    texts = [full[:i] for i in range(len(full) + 1)] + ["[tr", '{"a": fa', "-", "{,", '["x", ']
    proc = subprocess.run(
        ["node", "--input-type=module", "-e", _PARSE, json.dumps(texts)],
        cwd=CONFORMANCE,
        capture_output=True,
        timeout=60,
        check=True,
    )
    expected = json.loads(proc.stdout)
    mine = [None if (v := parse_partial_json(t)) is MISSING else v for t in texts]
    assert mine == expected


@pytest.mark.parametrize("major", [5, 6, 7])
def test_a_turns_own_assembler_reads_what_the_turn_wrote(major: int) -> None:
    """The assembler a turn feeds with its chunks as it makes them (the fused text path
    included) holds the message the bytes it wrote assemble to — which the test above holds
    against the real clients — for every recording."""
    compared = 0
    for recording in RECORDINGS:
        dialect = recording.parent.name
        description = get_dialect(dialect)
        translator = description.translator(TranslatorOptions(settings=description.settings()))
        turn = Turn(translator, TurnOptions(target=major, assemble=True))
        written: list[bytes] = []

        async def write(body: bytes, written: list[bytes] = written) -> None:
            written.append(body)

        run_without_waiting(
            TurnDriver(ReplayUpstream(read_frames(recording)), turn, REPLAY_SETTINGS).run(write)
        )
        assert turn.assembler is not None
        mine = json.loads(json.dumps(json_safe(turn.assembler.message)))
        assert mine == assembled(b"".join(written), major), recording.name
        compared += 1
    assert compared >= 96


def test_metadata_merges_as_the_client_merges_it() -> None:
    base = {"a": {"b": 1, "c": [1]}, "d": 1}
    assert merge_metadata(base, {"a": {"c": [2], "e": None}, "f": 2}) == {
        "a": {"b": 1, "c": [2], "e": None},
        "d": 1,
        "f": 2,
    }
    assert merge_metadata(base, "text") == "text"


def test_a_delta_for_a_part_never_started_stops_the_message_where_it_was() -> None:
    assembler = MessageAssembler(7)
    assembler.feed({"type": "start", "messageId": "m"})
    assembler.feed({"type": "text-start", "id": "t"})
    assembler.feed({"type": "text-delta", "id": "t", "delta": "ok"})
    assembler.feed({"type": "text-delta", "id": "nope", "delta": "lost"})
    assembler.feed({"type": "text-delta", "id": "t", "delta": " and after"})
    assert assembler.broken
    assert assembler.message == {
        "id": "m",
        "role": "assistant",
        "parts": [{"type": "text", "text": "ok", "state": "streaming"}],
    }


def test_an_error_chunk_ends_the_message_as_useChat_does() -> None:
    assembler = MessageAssembler(5)
    for chunk in (
        {"type": "start", "messageId": "m"},
        {"type": "start-step"},
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": "half"},
        {"type": "error", "errorText": "upstream failed"},
        {"type": "text-delta", "id": "t", "delta": " never shown"},
    ):
        assembler.feed(chunk)
    assert assembler.error_text == "upstream failed"
    assert assembler.message is not None
    assert assembler.message["parts"][-1]["text"] == "half"


def test_a_long_answer_is_assembled_in_linear_time() -> None:
    assembler = MessageAssembler(7)
    assembler.feed({"type": "start", "messageId": "m"})
    assembler.feed({"type": "text-start", "id": "t"})
    for _ in range(200_000):
        assembler.feed({"type": "text-delta", "id": "t", "delta": "word "})
    assembler.feed({"type": "text-end", "id": "t"})
    assert assembler.message is not None
    assert len(assembler.message["parts"][0]["text"]) == 1_000_000
