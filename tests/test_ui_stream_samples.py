"""The validator agrees with the real clients on every recorded ui-stream sample."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from chunkbridge.translators.core.validator import validate_sse

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "fixtures" / "ui-stream"
VERDICTS = json.loads((SAMPLES / "verdicts.json").read_text())
CASES = [(name, int(major)) for name, per in sorted(VERDICTS.items()) for major in per]


def test_sample_set_is_broad() -> None:
    files = {p.stem for p in SAMPLES.glob("*.sse")}
    assert files == set(VERDICTS), "every sample has a recorded verdict and vice versa"
    assert len(files) >= 40
    oks = [v["ok"] for per in VERDICTS.values() for v in per.values()]
    assert oks.count(True) >= 60 and oks.count(False) >= 60
    # samples where the majors disagree prove the per-major tables are exercised
    split = [n for n, per in VERDICTS.items() if len({v["ok"] for v in per.values()}) > 1]
    assert len(split) >= 10


@pytest.mark.parametrize(("name", "major"), CASES, ids=[f"{n}-ai{m}" for n, m in CASES])
def test_validator_agrees_with_recorded_client(name: str, major: int) -> None:
    body = (SAMPLES / f"{name}.sse").read_bytes()
    recorded = VERDICTS[name][str(major)]
    report = validate_sse(body, major)
    assert report.ok is recorded["ok"], (recorded, [str(e) for e in report.errors])
    if recorded["ok"]:
        assert report.error_text == recorded.get("errorText")


@pytest.mark.conformance
def test_recorded_verdicts_match_real_clients_now(real_clients) -> None:
    names = sorted(VERDICTS)
    results = real_clients.check_many([(SAMPLES / f"{n}.sse").read_bytes() for n in names])
    for name, per_major in zip(names, results, strict=True):
        for major, verdict in per_major.items():
            assert verdict.ok is VERDICTS[name][str(major)]["ok"], (name, major, verdict.fatal)


@pytest.mark.parametrize("target", [5, 6, 7])
def test_validate_cli_exit_codes(target: int, tmp_path: Path) -> None:
    ok_name = "valid-basic"
    bad_name = "invalid-text-delta-before-start"
    run = [sys.executable, "-m", "chunkbridge", "validate", "--target", str(target)]
    ok = subprocess.run([*run, str(SAMPLES / f"{ok_name}.sse")], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = subprocess.run([*run, str(SAMPLES / f"{bad_name}.sse")], capture_output=True, text=True)
    assert bad.returncode == 1
    assert "line 5" in bad.stdout and "text part is not open" in bad.stdout
    missing = subprocess.run([*run, str(tmp_path / "nope.sse")], capture_output=True, text=True)
    assert missing.returncode == 2
    usage = subprocess.run([*run[:-2], "--target", "8", "x"], capture_output=True, text=True)
    assert usage.returncode == 2


def test_validate_reads_stdin_and_warns() -> None:
    body = (SAMPLES / "valid-last-event-without-blank-line.sse").read_bytes()
    proc = subprocess.run(
        [sys.executable, "-m", "chunkbridge", "validate", "-"], input=body, capture_output=True
    )
    assert proc.returncode == 0
    assert b"drops it silently" in proc.stdout


def test_validate_judges_a_continuation_against_the_message_it_continues(tmp_path: Path) -> None:
    """A continuation's output for a tool part of the continued message is fine there, and
    unknown on its own."""
    body = (
        'data: {"type":"start","messageId":"m1"}\n\n'
        'data: {"type":"start-step"}\n\n'
        'data: {"type":"tool-output-denied","toolCallId":"c1"}\n\n'
        'data: {"type":"finish"}\n\ndata: [DONE]\n\n'
    )
    sse = tmp_path / "continuation.sse"
    sse.write_text(body)
    message = {
        "id": "m1",
        "role": "assistant",
        "parts": [
            {
                "type": "tool-rm",
                "toolCallId": "c1",
                "state": "approval-responded",
                "input": {},
                "approval": {"id": "a1", "approved": False},
            }
        ],
    }
    continued = tmp_path / "message.json"
    continued.write_text(json.dumps(message))
    run = [sys.executable, "-m", "chunkbridge", "validate", "--target", "7", str(sse)]
    alone = subprocess.run(run, capture_output=True, text=True)
    assert alone.returncode == 1 and "line 5" in alone.stdout
    joined = subprocess.run([*run, "--continues", str(continued)], capture_output=True, text=True)
    assert joined.returncode == 0, joined.stdout + joined.stderr
    continued.write_text('{"role": "user", "parts": []}')
    wrong = subprocess.run([*run, "--continues", str(continued)], capture_output=True, text=True)
    assert wrong.returncode == 2 and "assistant" in wrong.stderr
