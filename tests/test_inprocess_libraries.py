"""The agent libraries' dialects (pydantic-ai, the OpenAI Agents SDK, LangGraph) answered by
``ui_stream``/``UIStreamResponse``: each live scenario of their tests, handed over as the app
would (an async context manager entered by the response, an async iterator), gives the
chunks its golden holds — the same parts in the same order, the same text — and every answer
is accepted by the real ai 5, 6 and 7; a run that raises ends with its error."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from chunkbridge import ui_stream
from tests.helpers import decode_sse, of_type, text_of, types
from tests.langgraph_graphs import SCENARIOS as GRAPHS
from tests.openai_agents_agents import SCENARIOS as RUNS
from tests.pydantic_ai_agents import SCENARIOS as AGENTS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
LIBRARIES: dict[str, dict[str, Callable[[], Any]]] = {
    "pydantic-ai": {name: scenario.run for name, scenario in AGENTS.items()},
    "openai-agents": dict(RUNS),
    "langgraph": dict(GRAPHS),
}


async def test_every_live_scenario_answers_as_its_golden(real_clients: Any) -> None:
    bodies: list[bytes] = []
    for dialect, scenarios in LIBRARIES.items():
        for name, run in sorted(scenarios.items()):
            body = b"".join([piece async for piece in ui_stream(run(), dialect=dialect)])
            golden = decode_sse((FIXTURES / dialect / f"{name}.sse").read_bytes())
            chunks = decode_sse(body)
            assert types(chunks) == types(golden), (dialect, name)
            assert text_of(chunks) == text_of(golden), (dialect, name)
            assert [c["errorText"] for c in of_type(chunks, "error")] == [
                c["errorText"] for c in of_type(golden, "error")
            ], (dialect, name)
            bodies.append(body)
    names = [(d, n) for d, s in LIBRARIES.items() for n in sorted(s)]
    for (dialect, name), verdicts in zip(names, real_clients.check_many(bodies), strict=True):
        assert all(v.ok for v in verdicts.values()), (dialect, name, verdicts)
