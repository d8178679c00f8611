"""The ``open-harness`` upstream contract: settings, and what a turn sends upstream."""

from __future__ import annotations

from typing import Any

from chunkbridge.kit import (
    TurnInput,
)
from chunkbridge.protocol_specs import open_harness as spec


def send_frame(turn: TurnInput) -> dict[str, Any]:
    return spec.send_frame(turn.run_id, turn.require_prompt().text)


def abort_frame(turn: TurnInput) -> dict[str, Any]:
    return spec.abort_frame(turn.run_id)
