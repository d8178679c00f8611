"""Record the real clients' verdicts for ``fixtures/ui-stream/*.sse`` into ``verdicts.json``.

    .venv/bin/python -m tests.conformance.record_verdicts

The test suite re-runs the clients and fails when a recorded verdict no longer matches, so the
file cannot go stale silently; this script only writes it.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.conformance.harness import run_cases

SAMPLES = Path(__file__).resolve().parents[2] / "fixtures" / "ui-stream"


def verdict_record(verdict) -> dict:
    record = {"ok": verdict.ok}
    if verdict.fatal:
        record["fatal"] = verdict.fatal.splitlines()[0][:200]
    if verdict.error_text is not None:
        record["errorText"] = verdict.error_text
    return record


def main() -> None:
    files = sorted(SAMPLES.glob("*.sse"))
    results = run_cases([{"body": f.read_bytes()} for f in files])
    verdicts = {
        f.stem: {str(m): verdict_record(v) for m, v in sorted(r.items())}
        for f, r in zip(files, results, strict=True)
    }
    out = SAMPLES / "verdicts.json"
    out.write_text(json.dumps(verdicts, indent=1, ensure_ascii=False) + "\n")
    print(f"recorded {len(verdicts)} samples into {out}")


if __name__ == "__main__":
    main()
