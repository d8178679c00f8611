"""Log lines: credentials and message contents never written, exceptions written in full."""

from __future__ import annotations

import json

import pytest
import structlog

from chunkbridge.gateway.logging import configure_logging, get_logger, redact


def test_credentials_and_contents_are_redacted_at_the_top_and_one_level_deep() -> None:
    event = redact(
        None,
        "info",
        {
            "event": "x",
            "Authorization": "Bearer abc",
            "x_api_key": "k",
            "openai_chat_api_key": "k",
            "refresh_token": "t",
            "delta": "user text",
            "status": 200,
            "headers": {"Cookie": "c", "accept": "text/event-stream", 3: "int key"},
            "session_id": "s1",
        },
    )
    assert event == {
        "event": "x",
        "Authorization": "[redacted]",
        "x_api_key": "[redacted]",
        "openai_chat_api_key": "[redacted]",
        "refresh_token": "[redacted]",
        "delta": "[redacted]",
        "status": 200,
        "headers": {"Cookie": "[redacted]", "accept": "text/event-stream", 3: "int key"},
        "session_id": "s1",
    }


def test_a_json_line_carries_the_traceback_and_no_secret(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging("info", "json")  # here: the logger binds the stderr it sees now
    try:
        try:
            raise ValueError("boom")
        except ValueError as exc:
            get_logger().error("turn.internal_error", api_key="sk-secret", exc_info=exc)
    finally:
        structlog.reset_defaults()
    (line,) = capsys.readouterr().err.splitlines()
    record = json.loads(line)
    assert record["event"] == "turn.internal_error" and record["level"] == "error"
    assert record["api_key"] == "[redacted]" and "sk-secret" not in line
    assert "Traceback" in record["exception"] and "ValueError: boom" in record["exception"]
