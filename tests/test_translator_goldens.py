"""Recorded upstream sessions replay byte-exactly into their golden SSE files, and every golden
(and every replay for targets 6 and 7) is accepted by the real AI SDK clients."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chunkbridge.gateway.devtools.recordings import read_frames
from chunkbridge.gateway.devtools.replay import replay_file
from chunkbridge.translators.core.sse_codec import encode_chunks
from tests.helpers import new_turn

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
DIALECTS = (
    "ag-ui",
    "agent-ops-v2",
    "anthropic-messages",
    "gemini",
    "langgraph",
    "open-harness",
    "openai-agents",
    "openai-chat",
    "openai-responses",
    "pi-agent",
    "pydantic-ai",
)
RECORDINGS = sorted((d, p) for d in DIALECTS for p in (FIXTURES / d).glob("*.jsonl"))
IDS = [f"{d}/{p.stem}" for d, p in RECORDINGS]


def test_each_dialect_has_at_least_12_recordings() -> None:
    for dialect in DIALECTS:
        assert len(list((FIXTURES / dialect).glob("*.jsonl"))) >= 12, dialect


@pytest.mark.parametrize(("dialect", "recording"), RECORDINGS, ids=IDS)
def test_replay_matches_golden(chunkbridge_golden, dialect: str, recording: Path) -> None:
    chunkbridge_golden(dialect, recording)


_DIGESTS = """
import hashlib, json, sys
from pathlib import Path
from chunkbridge.gateway.devtools.replay import replay_file
out = {}
for dialect, path in json.loads(sys.stdin.read()):
    for target in (5, 7):
        body = replay_file(dialect, Path(path), target=target)
        out[f"{dialect}/{Path(path).stem}@{target}"] = hashlib.sha256(body).hexdigest()
print(json.dumps(out))
"""


def test_replay_is_deterministic_across_processes_and_hash_seeds() -> None:
    # Every recording, for targets 5 and 7, in two interpreters with different hash seeds (set
    # and dict orders, ids…): byte-identical bodies.
    cases = json.dumps([(d, str(p)) for d, p in RECORDINGS])
    digests = []
    for seed in ("1", "4242"):
        proc = subprocess.run(
            [sys.executable, "-c", _DIGESTS],
            input=cases,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONHASHSEED": seed},
            check=True,
        )
        digests.append(json.loads(proc.stdout))
    assert len(digests[0]) == 2 * len(RECORDINGS)
    assert digests[0] == digests[1]


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
