"""What the in-process dialects share (the kit's ``InProcessContract`` and
``LibraryTranslator``): a dialect may have no network contract, ``serve`` refuses it in front of an
upstream URL and says why, and a driver that reads objects and errors itself gets the answer the
kit's own frames give."""

from __future__ import annotations

import pytest

from chunkbridge.kit import Dialect, InProcessContract, LibraryTranslator
from tests.helpers import new_turn, run_cli

IN_PROCESS = ("langgraph", "openai-agents", "pydantic-ai")


def test_a_dialect_needs_a_contract_and_may_be_in_process_only() -> None:
    with pytest.raises(ValueError, match="has no upstream contract"):
        Dialect(name="nothing", summary="", translator=LibraryTranslator)
    contract = InProcessContract(extra="x", events="x events", record=lambda e: e)
    dialect = Dialect(name="lib", summary="", translator=LibraryTranslator, in_process=contract)
    assert dialect.in_process_only and dialect.transports == ()


@pytest.mark.parametrize("dialect", IN_PROCESS)
def test_serve_says_an_in_process_dialect_cannot_front_an_upstream(
    capsys: pytest.CaptureFixture[str], dialect: str
) -> None:
    code, listing, _ = run_cli(capsys, "dialects")
    assert code == 0 and f"{dialect:18} in-process" in listing, listing
    upstream = "http://127.0.0.1:9/agent"
    code, _, err = run_cli(capsys, "serve", "--dialect", dialect, "--upstream", upstream)
    assert code != 0
    assert f"dialect '{dialect}' is in-process only" in err, err
    assert f"pip install 'chunkbridge[{dialect}]'" in err and "cannot front an upstream URL" in err


def test_a_driver_without_the_end_frame_completes_and_reads_errors_as_the_kit_does() -> None:
    """A driver that turns objects into events itself (``read_object``), ends the turn with
    ``upstream_ended`` and hands exceptions to ``read_error`` gets the same answer."""
    turn = new_turn("openai-agents")
    agent = {"type": "agent_updated_stream_event", "new_agent": {"name": "A"}}
    (event,) = turn.translator.read_object(agent)
    out = turn.feed(event) + turn.upstream_ended()
    assert out[-1] == {"type": "finish", "finishReason": "stop", "messageMetadata": {"agent": "A"}}
    failed = new_turn("langgraph")
    (frame,) = failed.translator.read_error(RuntimeError("graph down"))
    out = failed.feed(frame)
    assert [c["type"] for c in out] == ["start", "error", "finish"]
    assert out[1]["errorText"] == "graph down"
