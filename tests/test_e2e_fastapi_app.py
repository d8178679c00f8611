"""Proof in a real browser: ``examples/fastapi-app`` run as its own process — one FastAPI app with
an OpenAI SDK route, a pydantic-ai agent, a LangGraph graph, the gateway mounted under ``/chat``
(SQLite store, the calculator's MCP tools) and the built React example — driven in Debian's
headless Chromium for AI SDK 5 and 7 (``examples/react-usechat/e2e/fastapi_app.mjs``). The
OpenAI SDK and the gateway both call a provider on 127.0.0.1 that replays recordings
(``tests/provider_server.py``); the agent and the graph run their own scripted models.

One run of the driver plays both builds, one after the other (the provider answers in the order
the requests come); each test checks what one build saw."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.components import used
from tests.conftest import require
from tests.gateway_harness import app_thread, free_port
from tests.helpers import result_of
from tests.provider_server import Script, ScriptedProvider, recording
from tests.test_e2e_browser import APP, ARTIFACTS, BUILDS, build_app, missing, page_script

EXAMPLE = APP.parent / "fastapi-app"
SESSION = "e2e-fastapi"
MODEL = "gpt-e2e"  # OPENAI_MODEL: what the app asks the provider for

pytestmark = pytest.mark.e2e


def scripts() -> list[Script]:
    """What the provider answers, in order, for each build: the OpenAI route's answer, the
    answer the user stops ("Hello", then the stream held open), the gateway's three model calls
    (``add``, then ``multiply``, then the answer)."""
    hello = recording("openai-chat", "plain-text")
    loop = [Script(recording("agent-loop/openai-chat", f"two-steps-{n}")) for n in (1, 2, 3)]
    return [Script(hello), Script(hello[:2], hold=60), *loop] * len(BUILDS)


@contextmanager
def example_app(port: int, env: dict[str, str], cwd: Path) -> Iterator[str]:
    """``uvicorn app:app`` in examples/fastapi-app, as its README runs it: its URL, once the
    mounted gateway is ready (the app's lifespan started its store and MCP server)."""
    log = (cwd / "app.log").open("w")
    args = ["-m", "uvicorn", "--app-dir", str(EXAMPLE), "app:app", "--port", str(port)]
    proc = subprocess.Popen(
        [sys.executable, *args], stdout=log, stderr=subprocess.STDOUT, env=env, cwd=cwd
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, (cwd / "app.log").read_text()
            assert time.monotonic() < deadline, (cwd / "app.log").read_text()
            try:
                if httpx.get(f"{url}/chat/healthz", timeout=0.5, trust_env=False).is_success:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@dataclass
class Observed:
    seen: dict[str, dict[str, Any]]
    provider: ScriptedProvider
    #: The gateway's SQLite file (CHATS_DB).
    store: Path

    def __call__(self, build: str) -> dict[str, Any]:
        """What ``build`` saw, once it ran without a failure or a page error."""
        seen = self.seen[build]
        assert "failure" not in seen, seen["failure"]
        assert not seen["pageErrors"], seen["pageErrors"]
        return seen

    def requests(self, build: str) -> list[dict[str, Any]]:
        """The bodies the provider got during ``build``'s run (each build made five)."""
        per_build = len(self.provider.scripts) // len(BUILDS)
        start = BUILDS.index(build) * per_build
        return [body for _, body in self.provider.requests[start : start + per_build]]


@pytest.fixture(scope="module")
def driven(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Observed]:
    """The provider, the example app (started while the React app builds) and one run of the
    driver."""
    require("browser end-to-end set-up", missing())
    work = tmp_path_factory.mktemp("fastapi-app")
    dist = work / "dist"
    dist.mkdir()  # served by the app from its start; filled by the build
    provider = ScriptedProvider(scripts())
    ARTIFACTS.mkdir(exist_ok=True)
    with app_thread(provider.app()) as base, ThreadPoolExecutor(1) as pool:
        built = pool.submit(build_app, dist)
        env = {
            **{k: v for k, v in os.environ.items() if k != "AGENT_MODEL"},
            "OPENAI_BASE_URL": f"{base}/v1",
            "OPENAI_API_KEY": "sk-test",
            "OPENAI_MODEL": MODEL,
            "CHATS_DB": str(work / "chats.sqlite3"),
            "REACT_DIST": str(dist),
            "NO_PROXY": "127.0.0.1",
        }
        with example_app(free_port(), env, work) as origin:
            built.result()
            config = {"origin": origin, "session": SESSION, "artifacts": str(ARTIFACTS)}
            seen = page_script("e2e/fastapi_app.mjs", config)
            yield Observed(seen, provider, work / "chats.sqlite3")


@pytest.fixture
def observed(driven: Observed) -> Observed:
    """The shared browser run, counted as this test's use of Chromium and of a real MCP server
    (started by the example app's gateway, a process of its own)."""
    used("chromium")
    used("mcp")
    return driven


@pytest.fixture(params=BUILDS)
def build(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_the_openai_sdk_route_streams_to_usechat(build: str, observed: Observed) -> None:
    seen = observed(build)
    assert seen["sdk"] == f"AI SDK {build[-1]}"
    assert seen["openai"] == {"text": "Hello there!", "status": "ready", "tools": []}
    sent = observed.requests(build)[0]  # request_body(): the conversation, for OPENAI_MODEL
    assert sent["model"] == MODEL and sent["stream"] is True
    assert sent["messages"] == [{"role": "user", "content": "Say hello"}]


def test_stop_closes_the_sdk_stream(build: str, observed: Observed) -> None:
    stop = observed(build)["stop"]
    assert stop["status"] == "ready" and stop["errors"] == 0, stop
    assert stop["readyAfterMs"] < 3000, stop
    assert stop["text"] == "Hello", stop  # what came before Stop; the provider held the rest
    assert stop["requestFailure"], "the page aborted its request"
    # the provider saw the SDK's stream closed soon after the click, where it would have held it
    # open for a minute (within a second of the disconnect, which comes after Stop's request to
    # {endpoint}/{chat}/stop, a 404 here; the bound leaves room for a loaded machine)
    closes = observed.provider.closed_times  # one per build, in the order they ran
    assert len(closes) == len(BUILDS), closes  # every other stream ran to its end
    delay = closes[BUILDS.index(build)] - stop["stoppedAt"] / 1000
    assert 0 <= delay < 3.0, (delay, stop)
    assert observed.provider.completed == len(observed.provider.scripts) - len(BUILDS)
    sent = observed.requests(build)[1]  # the second turn carries the first
    assert [m["role"] for m in sent["messages"]] == ["user", "assistant", "user"]
    assert sent["messages"][1]["content"] == "Hello there!"


def test_the_pydantic_ai_agent_runs_its_tool(build: str, observed: Observed) -> None:
    agent = observed(build)["agent"]
    (tool,) = agent["tools"]
    assert (tool["name"], tool["state"], tool["input"]) == ("roll_die", "output-available", "{}")
    rolled = json.loads(tool["output"])
    assert rolled in range(1, 7)
    # pydantic-ai's TestModel answers with its tools' results, after the tool ran
    assert agent["text"] == json.dumps({"roll_die": rolled}, separators=(",", ":"))
    assert agent["status"] == "ready"


def test_the_langgraph_graph_answers(build: str, observed: Observed) -> None:
    graph = observed(build)["graph"]
    assert graph == {
        "text": "Hello from a LangGraph graph, streamed word by word.",
        "status": "ready",
        "tools": [],
    }


def test_the_mounted_gateway_runs_mcp_tools_and_keeps_the_chat(
    build: str, observed: Observed
) -> None:
    gateway = observed(build)["gateway"]
    assert gateway["status"] == "ready"
    assert gateway["text"] == "I'll add first.Now the product.(2 + 3) × 4 = 20."
    calls = [
        (t["name"], t["state"], json.loads(t["input"]), result_of(json.loads(t["output"])))
        for t in gateway["tools"]
    ]
    assert calls == [  # run by the real calculator server the app's lifespan started
        ("add", "output-available", {"a": 2, "b": 3}, {"result": 5.0}),
        ("multiply", "output-available", {"a": 5, "b": 4}, {"result": 20.0}),
    ]
    first = observed.requests(build)[2]  # the gateway's first model call
    assert {t["function"]["name"] for t in first["tools"]} >= {"add", "multiply", "save_note"}
    assert first["messages"][-1] == {"role": "user", "content": "What is (2 + 3) × 4?"}
    # reloaded, the page loads the chat from the store: the same conversation
    reloaded = observed(build)["reloaded"]
    assert reloaded == {
        "userTexts": ["What is (2 + 3) × 4?"],
        "text": gateway["text"],
        "tools": gateway["tools"],
    }
    with sqlite3.connect(observed.store) as db:
        rows = db.execute(
            "SELECT role, body FROM cb_messages WHERE session_id = ? AND chat_id = ?"
            " ORDER BY position",
            (SESSION, gateway["chat"]),
        ).fetchall()
    assert [role for role, _ in rows] == ["user", "assistant"]
    parts = json.loads(rows[1][1])["parts"]
    assert [p["toolName"] for p in parts if p["type"] == "dynamic-tool"] == ["add", "multiply"]
