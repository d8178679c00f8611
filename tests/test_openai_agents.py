"""openai-agents: real OpenAI Agents SDK runs (its ``ScriptedModel`` fed exact Responses API
stream events, no network) streamed in-process through the ``openai-agents`` dialect: each
recording is what the SDK emits now, the live objects give the golden's bytes, the real ai
5/6/7 clients take every golden (``tests/test_translator_goldens.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers import decode_sse, new_turn, of_type
from tests.library_runs import check_live_run
from tests.openai_agents_agents import SCENARIOS, model_call

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "openai-agents"
DIALECT = "openai-agents"


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_the_live_run_is_its_recording_and_its_golden(
    name: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    update = bool(request.config.getoption("--update-goldens"))
    recording = FIXTURES / f"{name}.jsonl"
    await check_live_run(DIALECT, SCENARIOS[name], recording, tmp_path, update)


def _chunks(name: str) -> list[dict[str, Any]]:
    return decode_sse((FIXTURES / f"{name}.sse").read_bytes())


def test_what_the_goldens_show() -> None:
    handoff = _chunks("handoff")
    assert of_type(handoff, "data-handoff") == [
        {"type": "data-handoff", "data": {"from": "Triage", "to": "Billing"}}
    ]
    (transfer,) = of_type(handoff, "tool-output-available")
    assert transfer["output"] == {"assistant": "Billing"}
    assert handoff[0]["messageMetadata"] == {"agent": "Triage"}
    assert handoff[-1]["messageMetadata"]["agent"] == "Billing"
    steps = [c["type"] for c in _chunks("tool-call") if c["type"].endswith("-step")]
    assert steps == ["start-step", "finish-step", "start-step", "finish-step"]  # two model calls
    assert _chunks("tool-call")[-1]["messageMetadata"]["usage"] == {
        "inputTokens": 20,
        "outputTokens": 10,
    }
    assert of_type(_chunks("max-turns"), "error")[0]["errorText"] == "Max turns (1) exceeded"
    assert _chunks("approval-pending")[-1]["finishReason"] == "tool-calls"
    texts = [c["delta"] for c in of_type(_chunks("unstreamed-items"), "text-delta")]
    assert texts == ["All at once."]  # from message_output_created: nothing streamed it


def test_unknown_and_malformed_events_follow_the_policy() -> None:
    turn = new_turn(DIALECT)
    out = turn.feed({"type": "agent_updated_stream_event", "new_agent": {"name": "A"}})
    out += turn.feed({"type": "raw_response_event", "data": {"type": "response.brand_new"}})
    out += turn.feed({"type": "run_item_stream_event", "name": "mcp_list_tools", "item": {}})
    out += turn.feed({"type": "something_else"})
    bad = {"type": "response.output_text.delta", "item_id": 7, "delta": "x"}
    out += turn.feed({"type": "raw_response_event", "data": bad})
    out += turn.feed({"chunkbridge": "end"})
    kinds = [c["type"] for c in out]
    assert "data-raw-response.brand_new" in kinds and "data-mcp_list_tools" in kinds
    assert "data-something_else" in kinds
    (malformed,) = of_type(out, "data-upstream-malformed")
    assert malformed["data"]["reason"] == "raw_response_event: 'item_id' must be a string"
    assert kinds[-1] == "finish" and turn.finish_reason == "stop"


async def test_closing_the_event_source_ends_the_run() -> None:
    """A consumer that stops reading (the client pressed Stop) closes the source: the SDK's
    run ends with it, nothing left running."""
    from agents import Agent, Runner
    from agents.testing import ScriptedModel

    from chunkbridge.gateway.in_process import library_events

    model = ScriptedModel([model_call(("text", "m1", ["one ", "two ", "three"]))])
    result = Runner.run_streamed(Agent(name="A", model=model), "hi")
    source = library_events(result.stream_events())
    seen = [await anext(source) for _ in range(3)]
    assert [e.type for e in seen][-1] == "raw_response_event" and not result.is_complete
    await source.aclose()
    assert result.is_complete
