"""The validator agrees with the real clients on every recorded ui-stream sample."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from chunkbridge.translators.core.validator import validate_sse
from tests.conformance.harness import AI7_WITHOUT_RESET_STEP
from tests.helpers import run_cli

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
    # the pinned ai 7 (7.0.173) is one that accepts reset-step
    report = validate_sse(body, major, reset_step=major == 7)
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
def test_validate_cli_exit_codes(
    target: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = ("validate", "--target", str(target))
    code, out, err = run_cli(capsys, *run, str(SAMPLES / "valid-basic.sse"))
    assert code == 0, out + err
    code, out, _ = run_cli(capsys, *run, str(SAMPLES / "invalid-text-delta-before-start.sse"))
    assert code == 1
    assert "line 5" in out and "text part is not open" in out
    code, _, err = run_cli(capsys, *run, str(tmp_path / "nope.sse"))
    assert code == 2 and "cannot read" in err
    code, _, err = run_cli(capsys, "validate", "--target", "8", "x")
    assert code == 2 and "--target" in err


def test_validate_reads_stdin_and_warns() -> None:
    """``python -m chunkbridge`` itself, reading its standard input."""
    body = (SAMPLES / "valid-last-event-without-blank-line.sse").read_bytes()
    proc = subprocess.run(
        [sys.executable, "-m", "chunkbridge", "validate", "-"], input=body, capture_output=True
    )
    assert proc.returncode == 0
    assert b"drops it silently" in proc.stdout


def test_validate_judges_a_continuation_against_the_message_it_continues(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
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
    run = ("validate", "--target", "7", str(sse))
    code, out, _ = run_cli(capsys, *run)
    assert code == 1 and "line 5" in out
    code, out, err = run_cli(capsys, *run, "--continues", str(continued))
    assert code == 0, out + err
    continued.write_text('{"role": "user", "parts": []}')
    code, _, err = run_cli(capsys, *run, "--continues", str(continued))
    assert code == 2 and "assistant" in err


def test_validate_accepts_reset_step_only_for_a_client_said_to_have_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--reset-step`` (the ``reset_step`` setting): an ai 7 of 7.0.70 or later. Without it an
    ai 7 client may be older, and those reject the chunk type."""
    sample = str(SAMPLES / "reset-step.sse")
    code, out, _ = run_cli(capsys, "validate", "--target", "7", sample)
    assert code == 1 and "'reset-step' exists from ai 7.0.70 on" in out, out
    code, out, err = run_cli(capsys, "validate", "--target", "7", "--reset-step", sample)
    assert code == 0 and "accepted by ai 7 with reset-step" in out, out + err
    code, out, _ = run_cli(capsys, "validate", "--target", "7", "--reset-step", "--json", sample)
    assert code == 0 and json.loads(out)["resetStep"] is True
    for command in (["validate"], ["replay", "--dialect", "openai-chat"]):
        code, _, err = run_cli(capsys, *command, "--target", "6", "--reset-step", sample)
        assert code == 2 and "--reset-step needs --target 7" in err, command


@pytest.mark.conformance
def test_the_ai_7_without_reset_step_rejects_what_the_validator_rejects(real_clients) -> None:
    """The harness's 7.0.69, the last ai 7 before reset-step (loose like the pinned 7), is the
    client ``reset_step`` off stands for: it rejects the chunk type the pinned 7 accepts."""
    body = (SAMPLES / "reset-step.sse").read_bytes()
    verdicts = real_clients.check(body, majors=(7, AI7_WITHOUT_RESET_STEP))
    assert verdicts[7].ok and validate_sse(body, 7, reset_step=True).ok
    older = verdicts[AI7_WITHOUT_RESET_STEP]
    assert not older.ok and older.fatal is not None and "reset-step" in older.fatal
    assert not validate_sse(body, 7).ok
    # loose like the pinned 7: a key it does not declare is ignored, not fatal
    extra = b'data: {"type":"start","future":1}\n\ndata: {"type":"finish"}\n\ndata: [DONE]\n\n'
    assert real_clients.check(extra, majors=(AI7_WITHOUT_RESET_STEP,))[AI7_WITHOUT_RESET_STEP].ok
