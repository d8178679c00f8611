"""Recorded upstream sessions replay byte-exactly into their golden SSE files, and every golden
(and every replay for targets 6 and 7) is accepted by the real AI SDK clients."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.recordings import read_frames
from gateway.replay import replay_file
from tests.helpers import new_turn
from translators.core.sse_codec import encode_chunks

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
DIALECTS = (
    "ag-ui",
    "agent-ops-v2",
    "anthropic-messages",
    "gemini",
    "open-harness",
    "openai-chat",
    "openai-responses",
    "pi-agent",
)
RECORDINGS = sorted((d, p) for d in DIALECTS for p in (FIXTURES / d).glob("*.jsonl"))
IDS = [f"{d}/{p.stem}" for d, p in RECORDINGS]


def test_each_dialect_has_at_least_12_recordings() -> None:
    for dialect in DIALECTS:
        assert len(list((FIXTURES / dialect).glob("*.jsonl"))) >= 12, dialect


@pytest.mark.parametrize(("dialect", "recording"), RECORDINGS, ids=IDS)
def test_replay_matches_golden(chunkbridge_golden, dialect: str, recording: Path) -> None:
    chunkbridge_golden(dialect, recording)


@pytest.mark.parametrize(("dialect", "recording"), RECORDINGS[:3], ids=IDS[:3])
def test_replay_is_deterministic(dialect: str, recording: Path) -> None:
    assert replay_file(dialect, recording) == replay_file(dialect, recording)


@pytest.mark.conformance
def test_every_golden_and_target_replay_is_accepted_by_real_clients(real_clients) -> None:
    bodies: list[bytes] = []
    majors: list[tuple[int, ...]] = []
    for dialect, recording in RECORDINGS:
        bodies.append(recording.with_suffix(".sse").read_bytes())
        majors.append((5, 6, 7))
        for target in (6, 7):
            bodies.append(replay_file(dialect, recording, target=target))
            majors.append((target,))
    results = real_clients.check_many(bodies)
    names = [f"{d}/{p.stem}" for d, p in RECORDINGS for _ in range(3)]
    for name, wanted, per_major in zip(names, majors, results, strict=True):
        for major in wanted:
            verdict = per_major[major]
            assert verdict.ok, (name, major, verdict.fatal)


@pytest.mark.parametrize(("dialect", "recording"), RECORDINGS, ids=IDS)
def test_encode_frame_hot_path_gives_the_same_bytes(dialect: str, recording: Path) -> None:
    general, fused = new_turn(dialect), new_turn(dialect)
    for frame in read_frames(recording):
        assert fused.encode_frame(frame) == encode_chunks(general.feed_frame(frame)), frame[:80]
    assert fused.encode_frame(b'"x"') == encode_chunks(general.feed_frame(b'"x"'))
