"""The pipeline micro-benchmark keeps running against the current API (it once rotted unseen)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_pipeline_benchmark_runs_every_variant_on_a_small_n() -> None:
    env = {**os.environ, "REPEAT": "1", "BENCH_JSON": "1"}
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "pipeline.py"), "2000"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout.strip().splitlines()[-1])
    variants = {row["variant"] for row in rows}
    assert {"guard_encode", "agent-ops-v2_text", "agent-ops-v2_mixed"} <= variants
    assert {f"{d}_text" for d in ("open-harness", "openai-chat")} <= variants
    assert all(row["n"] == 2000 and row["ns_per_event_best"] > 0 for row in rows)


def test_transcript_load_benchmark_runs_on_a_small_chat() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "transcript_load.py"), "sqlite"]
        + ["--messages", "20", "--requests", "3", "--warmup", "1"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("store = sqlite: 20 messages"), result.stdout
    assert " p50 " in result.stdout and " p99 " in result.stdout


def test_inprocess_benchmark_runs_every_row_on_a_small_turn() -> None:
    env = {**os.environ, "REPEAT": "1", "BENCH_JSON": "1"}
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "inprocess.py"), "60", "2"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout.strip().splitlines()[-1])
    assert set(rows) == {
        "gateway",
        "dicts",
        "sdk-objects",
        "vercel-adapter",
        "agent-via-ag-ui",
        "agent-native",
        "agent-alone",
    }
    assert all(len(values) == 1 and values[0] > 0 for values in rows.values())
