"""The agent loop as users run it: ``chunkbridge serve --config agent.toml`` (the
``examples/mcp-agent`` configuration, its MCP server over stdio) in front of ``chunkbridge
mock-upstream --sequence`` playing the scripted model of ``fixtures/agent-loop``: a question
that needs two tools in two steps, answered in one message the real ai 5, 6 and 7 accept."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import httpx

from chunkbridge.gateway.config_sources import load_config
from tests.agent_responses import FIXTURES, write_fixtures
from tests.gateway_harness import free_port, user_body
from tests.helpers import result_of
from tests.test_gateway_process import process

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "mcp-agent"


def test_the_scripted_model_fixtures_are_current() -> None:
    for path, text in write_fixtures().items():
        assert path.read_text() == text, f"{path}: run python tests/agent_responses.py"


def test_the_example_configuration_loads() -> None:
    from chunkbridge.gateway.registry import get_dialect

    models = {"anthropic-messages": get_dialect("anthropic-messages").settings}
    loaded = load_config(EXAMPLE / "agent.toml", dialect_models=models, environ={})
    config = loaded.config
    assert config.dialect == "anthropic-messages" and set(config.tools) == {"calculator"}
    assert config.tools["calculator"].args == ["calculator.py"] and config.max_steps == 8
    assert loaded.warnings == []


def test_serve_with_an_mcp_server_answers_in_two_tool_steps(
    tmp_path: Path, real_clients: Any
) -> None:
    toml = (EXAMPLE / "agent.toml").read_text()
    toml = toml.replace('command = "python3"', f'command = "{sys.executable}"')
    toml = toml.replace('args = ["calculator.py"]', f'args = ["{EXAMPLE / "calculator.py"}"]')
    toml = toml.replace('NOTES_FILE = "notes.txt"', f'NOTES_FILE = "{tmp_path / "notes.txt"}"')
    (tmp_path / "agent.toml").write_text(toml)
    steps = [str(FIXTURES / "anthropic-messages" / f"two-steps-{n}.jsonl") for n in (1, 2, 3)]
    model_port, port = free_port(), free_port()
    model = ("mock-upstream", "--transport", "http", "--sequence", "--port", str(model_port))
    with process(*model, *steps, ready_line="mock upstream"):
        serve = ("serve", "--config", str(tmp_path / "agent.toml"), "--port", str(port))
        upstream = ("--upstream", f"http://127.0.0.1:{model_port}", "--target", "5")
        with process(*serve, *upstream, ready_url=f"http://127.0.0.1:{port}/healthz"):
            response = httpx.post(
                f"http://127.0.0.1:{port}/api/sessions/s1/chat",
                json=user_body("What is (2 + 3) × 4?", id="c1"),
                timeout=30,
                trust_env=False,
            )
    assert response.status_code == 200, response.text
    for major, verdict in real_clients.check(response.content).items():
        assert verdict.ok, (major, verdict.fatal)
        parts = verdict.message["parts"]
        tools = [
            (p["toolName"], p["input"], result_of(p["output"])) for p in parts if "toolName" in p
        ]
        assert tools == [
            ("add", {"a": 2, "b": 3}, {"result": 5.0}),
            ("multiply", {"a": 5, "b": 4}, {"result": 20.0}),
        ]
        assert [p["text"] for p in parts if p["type"] == "text"][-1] == "(2 + 3) × 4 = 20."
        assert verdict.finish_reason == "stop"


def test_the_agent_demo_runs_its_mcp_tools_step_by_step(real_clients: Any) -> None:
    """`make demo AGENT=1`: the scripted model calls the built-in MCP server's tools — two steps
    for arithmetic, two calls in one step for the weather — and a note waits for approval,
    which the real ai 7 chat gives; the page says what to try."""
    from tests.conformance.harness import chat_loop

    port = free_port()
    args = ("demo", "--agent", "--target", "7", "--store", "off", "--port", str(port))
    with process(*args, ready_url=f"http://127.0.0.1:{port}/healthz"):
        base = f"http://127.0.0.1:{port}"
        page = httpx.get(base + "/", trust_env=False).text
        sums = httpx.post(
            f"{base}/api/sessions/d1/chat",
            json=user_body("what is (2 + 3) × 4?"),
            trust_env=False,
            timeout=30,
        )
        weather = httpx.post(
            f"{base}/api/sessions/d2/chat",
            json=user_body("weather in Paris and Oslo"),
            trust_env=False,
            timeout=30,
        )
        answer = {"kind": "approval", "approved": True}
        note = chat_loop(f"{base}/api/sessions/d3/chat", 7, "note: buy milk", [answer])
        slow = counted_then_stopped(f"{base}/api/sessions/d4/chat")
    assert "gateway-run MCP tools" in page and "weather in Paris and Oslo" in page
    for major, verdict in real_clients.check(sums.content).items():
        assert verdict.ok and verdict.finish_reason == "stop", (major, verdict.fatal)
        tools = [(p["toolName"], result_of(p["output"])) for p in verdict.parts("dynamic-tool")]
        assert tools == [("add", {"result": 5.0}), ("multiply", {"result": 20.0})]
        assert "20" in verdict.text().rsplit("Done", 1)[-1]
        assert verdict.message["metadata"]["agentLoop"]["ending"] == "done"
    verdict = real_clients.check(weather.content, (7,))[7]
    assert verdict.ok, verdict.fatal
    cities = [result_of(p["output"])["city"] for p in verdict.parts("dynamic-tool")]
    assert cities == ["Paris", "Oslo"]
    assert len(verdict.message["metadata"]["agentLoop"]["steps"]) == 2  # both in one step
    assert note["error"] is None and note["status"] == "ready", note
    (saved,) = [p for p in note["messages"][-1]["parts"] if p.get("toolName") == "save_note"]
    assert saved["state"] == "output-available" and result_of(saved["output"]) == {
        "result": "note 1 saved"
    }
    # "slow": its progress shows on the part, then Stop settles it
    first = b'"output":{"progress":1,"total":20,"message":"1 of 20"},"preliminary":true'
    assert first in slow
    verdict = real_clients.check(slow, (7,))[7]
    assert verdict.ok, verdict.fatal
    (counting,) = verdict.parts("dynamic-tool")
    assert counting["toolName"] == "count_slowly" and counting["state"] == "output-error"


def counted_then_stopped(api: str) -> bytes:
    """A "slow" turn read until its first progress report, then stopped."""
    body = b""
    with httpx.Client(timeout=30, trust_env=False) as client:
        with client.stream("POST", api, json=user_body("slow", id="slow")) as response:
            pieces = response.iter_bytes()
            for piece in pieces:
                body += piece
                if b'"preliminary":true' in body:
                    break
            assert client.post(f"{api}/slow/stop").status_code == 202
            for piece in pieces:
                body += piece
    return body
