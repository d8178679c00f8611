"""pytest plugin (entry point ``pytest11``): golden-file tests for recorded upstream sessions.

Installed with chunkbridge, so a backend team can test its own recordings::

    def test_my_session(chunkbridge_golden):
        chunkbridge_golden("agent-ops-v2", "recordings/checkout.jsonl")   # compares with .sse

``--update-goldens`` rewrites the golden files instead of comparing. The golden sits next to the
recording (same stem, ``.sse``) unless a path is given. The replay runs through the gateway's own
turn driver (:mod:`chunkbridge.gateway.devtools.replay`), in sync and async tests alike.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("chunkbridge")
    group.addoption(
        "--update-goldens",
        action="store_true",
        default=False,
        help="rewrite chunkbridge golden .sse files instead of comparing against them",
    )


GoldenCheck = Callable[..., bytes]


@pytest.fixture
def chunkbridge_golden(request: pytest.FixtureRequest) -> GoldenCheck:
    """``check(dialect, recording, golden=None, target=5, reset_step=False) -> bytes``: replay
    and compare."""
    from chunkbridge.gateway.devtools.replay import golden_diff, replay_file

    update = bool(request.config.getoption("--update-goldens"))

    def check(
        dialect: str,
        recording: str | Path,
        golden: str | Path | None = None,
        target: int = 5,
        reset_step: bool = False,
    ) -> bytes:
        recording = Path(recording)
        golden_path = Path(golden) if golden is not None else recording.with_suffix(".sse")
        output = replay_file(dialect, recording, target=target, reset_step=reset_step)
        if update or not golden_path.exists():
            if not update:
                pytest.fail(
                    f"{golden_path} does not exist; run pytest --update-goldens to write it"
                )
            golden_path.write_bytes(output)
            return output
        diff = golden_diff(golden_path.read_bytes(), output, str(golden_path))
        if diff:
            pytest.fail(f"replay of {recording} differs from {golden_path}:\n{diff}", pytrace=False)
        return output

    return check
