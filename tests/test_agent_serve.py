"""The agent loop as users run it: ``chunkbridge serve --config agent.toml`` (the
``examples/mcp-agent`` configuration, its MCP server over stdio) in front of ``chunkbridge
mock-upstream --sequence`` playing the scripted model of ``fixtures/agent-loop``: a question
that needs two tools in two steps, answered in one message the real ai 5, 6 and 7 accept."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import httpx

from chunkbridge.gateway.config import load_config
from tests.agent_responses import FIXTURES, write_fixtures
from tests.gateway_harness import user_body
from tests.test_gateway_process import free_port, process

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
        tools = [(p["toolName"], p["input"], p["output"]) for p in parts if "toolName" in p]
        assert tools == [
            ("add", {"a": 2, "b": 3}, {"result": 5.0}),
            ("multiply", {"a": 5, "b": 4}, {"result": 20.0}),
        ]
        assert [p["text"] for p in parts if p["type"] == "text"][-1] == "(2 + 3) × 4 = 20."
        assert verdict.finish_reason == "stop"
