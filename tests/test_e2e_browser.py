"""Proof in a real browser: the React useChat app (AI SDK 5 and 7 builds) against the gateway in
demo mode, driven in Debian's headless Chromium by playwright-core (examples/react-usechat/e2e)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import require
from tests.test_gateway_process import free_port, process

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "examples" / "react-usechat"
ARTIFACTS = ROOT / "e2e-artifacts"
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")

pytestmark = pytest.mark.e2e


def _missing() -> str | None:
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} not found (apt-get install chromium)"
    if shutil.which("node") is None:
        return "node is not on PATH"
    for package in ("playwright-core", "vite", "ai-sdk-react2", "ai-sdk-react4"):
        if not (APP / "node_modules" / package / "package.json").exists():
            return f"examples/react-usechat/node_modules/{package} missing (make install)"
    return None


def drive(script: str, config: dict[str, Any], seconds: float) -> dict[str, Any]:
    """Run a browser script of the example (``examples/react-usechat/e2e``) with ``config``:
    what it observed, once it ran without a failure or a page error."""
    run = subprocess.run(
        ["node", script, json.dumps(config)],
        cwd=APP,
        capture_output=True,
        text=True,
        timeout=seconds,
        env={**os.environ, "CHROMIUM_PATH": CHROMIUM},
    )
    assert run.returncode == 0, run.stderr
    result: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    assert "failure" not in result, result.get("failure")
    assert not result.get("pageErrors"), result["pageErrors"]
    return result


@pytest.fixture(scope="module")
def built_app() -> Path:
    require("browser end-to-end set-up", _missing())
    build = subprocess.run(
        ["npm", "run", "build"], cwd=APP, capture_output=True, text=True, timeout=300
    )
    assert build.returncode == 0, build.stdout + build.stderr
    return APP / "dist"


@pytest.fixture(scope="module")
def servers(built_app: Path, tmp_path_factory: pytest.TempPathFactory):
    """The built app on a static server, and one demo gateway per build: the ai 7 build is served
    with target 7 (real tool approvals), the ai 5 build with target 5 (their question form)."""
    static_port = free_port()
    origin = f"http://127.0.0.1:{static_port}"
    static = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "http.server",
            str(static_port),
            "--bind",
            "127.0.0.1",
            "--directory",
            str(built_app),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    ports = {5: free_port(), 7: free_port()}

    def demo(target: int):
        return process(
            "demo",
            "--dialect",
            "agent-ops-v2",
            "--target",
            str(target),
            "--resume",
            "memory",  # the app's Stop asks the gateway to stop (a disconnect would detach)
            "--store-path",  # the demo keeps chats (store = sqlite)
            str(tmp_path_factory.mktemp("store") / "chats.sqlite3"),
            "--port",
            str(ports[target]),
            "--cors-origins",
            origin,
            ready_url=f"http://127.0.0.1:{ports[target]}/healthz",
        )

    try:
        with demo(5), demo(7):
            yield origin, {f"ai{t}": f"http://127.0.0.1:{port}" for t, port in ports.items()}
    finally:
        static.terminate()
        static.wait(10)


@pytest.mark.parametrize("build", ["ai5", "ai7"])
def test_use_chat_app_in_headless_chromium(build: str, servers) -> None:
    origin, gateways = servers
    gateway = gateways[build]
    ARTIFACTS.mkdir(exist_ok=True)
    screenshot = ARTIFACTS / f"react-usechat-{build}.png"
    config = {
        "appUrl": f"{origin}/{build}/index.html",
        "api": gateway,
        "build": build,
        "screenshot": str(screenshot),
    }
    result = drive("e2e/run.mjs", config, 180)
    assert result["sdk"] == f"AI SDK {build[-1]}"

    first = result["firstTurn"]
    assert first["distinctLengths"] >= 10, "the answer must render progressively"
    assert first["text"].startswith("You said: *Explain chunkbridge*")
    assert first["text"].endswith("Ask me anything else to see another turn.")
    (states,) = first["toolStates"].values()
    assert states[0] in ("input-streaming", "input-available")
    assert states[-1] == "output-available" and "input-available" in states
    assert json.loads(first["toolOutput"]) == {"matches": 3, "top": "README.md#usage"}

    second = result["secondTurn"]
    assert second["users"] == 2 and second["assistants"] == 2
    assert second["userTexts"] == ["Explain chunkbridge", "And a follow-up question"]
    assert second["lastText"].startswith("You said: *And a follow-up question*")

    stop = result["stop"]
    assert stop["status"] == "ready" and stop["readyAfterMs"] < 3000
    assert stop["textLater"] == stop["textAtStop"], "nothing may arrive after Stop"
    log = httpx.get(f"{gateway}/demo/upstream-events/{stop['session']}", trust_env=False).json()
    assert {"type": "abort"} in log["received"], "the upstream must receive the abort frame"

    resumed = result["resume"]  # a reload mid-answer: the answer completes in the new page
    assert resumed["status"] == "ready" and resumed["assistants"] == 1
    sent = httpx.get(f"{gateway}/demo/upstream-events/{resumed['session']}", trust_env=False)
    deltas = [e for e in sent.json()["sent"] if e.get("type") == "message.part.text-delta"]
    full = "".join(e["delta"] for e in deltas)
    assert resumed["text"] == full and len(full) > resumed["beforeReload"], resumed
    assert "The demo agent failed on purpose (you asked)." in result["error"]["text"]
    assert result["error"]["status"] == "error"

    stored = httpx.get(  # the gateway's copy of the stored chat, after the page's last reload
        f"{gateway}/api/sessions/{result['storedSession']}/chat/chat-{result['storedSession']}"
        "/messages",
        trust_env=False,
    ).json()

    def texts(role: str) -> list[str]:
        return [
            "".join(p["text"] for p in m["parts"] if p["type"] == "text")
            for m in stored
            if m["role"] == role
        ]

    mid, live, end = result["storedMid"], result["storedLive"], result["storedEnd"]
    # reloaded mid-answer: the conversation so far, and the running answer followed to its end
    assert mid["status"] == "ready", mid
    assert mid["userTexts"] == ["Explain chunkbridge", "slow answer please"]
    assert mid["assistantTexts"] == texts("assistant")[:2], mid
    assert len(mid["assistantTexts"][1]) > mid["beforeReload"], mid
    # reloaded at the end: the whole conversation as it was live, a question's answer included
    assert live["userTexts"] == [*mid["userTexts"], "ask me"] == texts("user")
    assert end["status"] == "ready"
    assert end["userTexts"] == live["userTexts"] and end["assistantTexts"] == live["assistantTexts"]
    assert end["assistantTexts"] == texts("assistant"), (end, texts("assistant"))
    assert end["answered"] == ['"green"'], end
    assert end["assistantTexts"][2].endswith("You chose **green**: a fine choice.")

    def received(session: str) -> list[dict]:
        url = f"{gateway}/demo/upstream-events/{session}"
        frames: list[dict] = httpx.get(url, trust_env=False).json()["received"]
        return frames

    question = result["question"]  # answered in the page: the agent continued, same message
    assert question["asked"] == "Which color do you prefer?"
    assert question["status"] == "ready" and question["assistants"] == 1, question
    assert question["answered"] == '"green"'
    assert question["text"] == "Before I answer, one question.You chose **green**: a fine choice."
    answers = [f for f in received(question["session"]) if f.get("type") == "answer"]
    assert answers == [
        {"type": "answer", "questionId": answers[0]["questionId"], "answer": "green"}
    ]

    approval = result["approval"]  # approved once, denied once
    assert approval["status"] == "ready" and approval["assistants"] == 2, approval
    assert approval["approved"]["state"] == "output-available"
    assert approval["approved"]["text"].endswith("Done: the branch is deleted.")
    assert approval["denied"]["text"].endswith("Understood, I left the branch alone.")
    decisions = [f for f in received(approval["session"]) if f.get("type") == "approval"]
    assert [d["approved"] for d in decisions] == [True, False]  # one frame per answer
    if build == "ai7":
        assert approval["denied"]["state"] == "output-denied"
        approved_states, denied_states = (approval["toolStates"][d["callId"]] for d in decisions)
        assert approved_states[-3:] == [
            "approval-requested",
            "approval-responded",
            "output-available",
        ], approved_states
        assert denied_states[-3:] == [
            "approval-requested",
            "approval-responded",
            "output-denied",
        ], denied_states
    else:  # ai 5: the question form, and a denial reads as an output error
        assert approval["denied"]["state"] == "output-error"

    # the gateway's demo page (make demo): a question answered, an approval approved
    assert result["demoPage"] == {"messages": 4, "status": "finished (stop)"}, result["demoPage"]

    reloaded = result["demoPageReloaded"]  # the demo page after a reload: the stored chat
    assert reloaded["messages"] == 4, reloaded
    assert "You chose **blue**: a fine choice." in reloaded["texts"][1], reloaded

    shots = ("-question-asked", "-question", "-approval-requested", "-approval", "-reload-mid")
    for suffix in ("", *shots, "-reload-end", "-demo-page-reloaded"):
        shot = ARTIFACTS / f"react-usechat-{build}{suffix}.png"
        assert shot.stat().st_size > 10_000, shot
    print(f"\nscreenshots of the finished chats ({build}): {ARTIFACTS}/react-usechat-{build}*.png")


def test_the_agent_demo_page_in_headless_chromium() -> None:
    """`make demo AGENT=1 TELEMETRY=1` in a real browser: the page shows each gateway-run tool
    call and its result, an approval given with the page's button runs the destructive tool, and
    the trace panel draws the request's trace — joined to the page's own ``traceparent``."""
    require("browser end-to-end set-up", _missing())
    port = free_port()
    ARTIFACTS.mkdir(exist_ok=True)
    screenshot, traced = ARTIFACTS / "demo-agent.png", ARTIFACTS / "demo-agent-trace.png"
    args = ("demo", "--agent", "--target", "7", "--store", "off", "--port", str(port))
    with process(*args, "--telemetry", "otlp", ready_url=f"http://127.0.0.1:{port}/healthz"):
        config = {
            "api": f"http://127.0.0.1:{port}",
            "screenshot": str(screenshot),
            "traceScreenshot": str(traced),
        }
        result = drive("e2e/demo_agent.mjs", config, 120)
    assert "gateway-run MCP tools" in result["header"]
    tools = result["tools"]
    assert tools[0].startswith("🔧 add") and "output-available" in tools[0] and "5" in tools[0]
    assert tools[1].startswith("🔧 multiply") and '{"result":20' in tools[1]
    assert result["status"] == "finished (stop)", result
    assert any("note 1 saved" in text for text in result["texts"]), result["texts"]
    assert screenshot.stat().st_size > 10_000
    # the first question's trace, parents before children: the page's request, the turn, a
    # model call per step (the demo model's own route below each), the two tool calls
    names = result["trace"]
    assert names[:2] == ["POST /api/sessions/{session_id}/chat", "chunkbridge.turn"], names
    assert names.count("chat claude-sonnet-4-5") == 3, names
    assert "execute_tool add" in names and "execute_tool multiply" in names, names
    assert names.index("execute_tool add") < names.index("execute_tool multiply")
    assert traced.stat().st_size > 10_000
