"""Proof in a real browser: the React useChat app (AI SDK 5 and 7 builds) and the gateway's own demo
page against gateways in demo mode, driven in Debian's headless Chromium by playwright-core
(examples/react-usechat/e2e).

One run of the driver (``e2e/run.mjs``) plays every scenario at once, each in its own context of
one Chromium, and each test checks what one scenario saw. The scenarios mostly wait for the demo
agent's paced answers: one after another they took two minutes, at once they take as long as the
slowest (a slow answer followed to its end after a reload)."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.components import used
from tests.conftest import require
from tests.gateway_harness import free_ports
from tests.test_gateway_process import process

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "examples" / "react-usechat"
ARTIFACTS = ROOT / "e2e-artifacts"
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
BUILDS = ("ai5", "ai7")

# One worker runs them all (--dist loadfile): the module's fixtures, the servers and the one
# browser run every test reads, are set up once.
pytestmark = pytest.mark.e2e


def missing() -> str | None:
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} not found (apt-get install chromium)"
    if shutil.which("node") is None:
        return "node is not on PATH"
    for package in ("playwright-core", "vite", "ai-sdk-react2", "ai-sdk-react4"):
        if not (APP / "node_modules" / package / "package.json").exists():
            return f"examples/react-usechat/node_modules/{package} missing (make install)"
    return None


def build_app(into: Path) -> None:
    """``npm run build`` (both builds), its output copied to ``into``. Other runs of this module in
    the checkout (another session's, another xdist worker's) build into the same ``dist`` and
    empty it first: the lock keeps the builds one at a time, and the pages load the copy, which
    no other build changes under them. ``into`` may exist already (a server serving it, started
    while the app builds)."""
    dist = APP / "dist"
    dist.mkdir(exist_ok=True)
    built = dist / f".built-{_sources_digest()}"
    with (dist / ".e2e-build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not built.exists():  # (the same sources were built already: by another test, or run)
            for old in dist.glob(".built-*"):
                old.unlink()
            build = subprocess.run(
                ["npm", "run", "build"], cwd=APP, capture_output=True, text=True, timeout=300
            )
            assert build.returncode == 0, build.stdout + build.stderr
            built.touch()
        shutil.copytree(
            dist,
            into,
            ignore=shutil.ignore_patterns(".e2e-build.lock", ".built-*"),
            dirs_exist_ok=True,
        )


def _sources_digest() -> str:
    """What the builds are made of: the page's sources, its build settings and locked deps."""
    digest = hashlib.sha256()
    files = [*sorted((APP / "src").rglob("*")), *(APP / name for name in _BUILD_INPUTS)]
    for path in files:
        if path.is_file():
            digest.update(path.relative_to(APP).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


_BUILD_INPUTS = ("index.html", "vite.config.js", "package.json", "package-lock.json")


@contextmanager
def _static_server(directory: Path, port: int) -> Iterator[str]:
    """``directory`` (the built app) served over HTTP: its origin, once it answers."""
    args = ["-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(directory)]
    server = subprocess.Popen(
        [sys.executable, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    origin = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx.head(origin, timeout=0.5, trust_env=False)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, f"{origin} does not answer"
                time.sleep(0.1)
        yield origin
    finally:
        server.terminate()
        server.wait(10)


@contextmanager
def _demo_gateway(port: int, *args: str) -> Iterator[str]:
    """``chunkbridge demo *args`` on ``port``, run as a process of its own (the real entry
    point): its URL, once it serves."""
    url = f"http://127.0.0.1:{port}"
    with process("demo", *args, "--port", str(port), ready_url=f"{url}/healthz"):
        yield url


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The built app on a static server ("app"); a demo gateway per build, the ai 7 build's with
    target 7 (real tool approvals), the ai 5 build's with target 5 (their question form); and the
    agent demo with telemetry ("agentDemo"); the dialect demo with ``busy = queue`` ("busyDemo").
    They start while the app builds: all at once."""
    require("browser end-to-end set-up", missing())
    app = tmp_path_factory.mktemp("app") / "dist"
    # all chosen at once: servers starting together must not be given the same port
    static_port, *ports = free_ports(5)
    origin = f"http://127.0.0.1:{static_port}"

    def dialect_demo(target: int) -> tuple[str, ...]:
        store = tmp_path_factory.mktemp("store") / "chats.sqlite3"  # the demo keeps chats
        return (
            *("--dialect", "agent-ops-v2", "--target", str(target)),
            *("--resume", "memory"),  # the app's Stop asks the gateway to stop (no mere detach)
            *("--store-path", str(store), "--cors-origins", origin),
        )

    starting = {
        "app": _static_server(app, static_port),
        "ai5": _demo_gateway(ports[0], *dialect_demo(5)),
        "ai7": _demo_gateway(ports[1], *dialect_demo(7)),
        "agentDemo": _demo_gateway(
            ports[2], "--agent", "--target", "7", "--store", "off", "--telemetry", "otlp"
        ),
        # what `make demo BUSY=queue` runs (resume = memory: the demo's own default)
        "busyDemo": _demo_gateway(
            ports[3], "--dialect", "agent-ops-v2", "--busy", "queue", "--store", "off"
        ),
    }
    with ExitStack() as stack, ThreadPoolExecutor(len(starting) + 1) as pool:
        built = pool.submit(build_app, app)
        urls = {name: pool.submit(stack.enter_context, cm) for name, cm in starting.items()}
        built.result()
        yield {name: url.result() for name, url in urls.items()}


class Observed:
    """What the driver's scenarios saw (``e2e/run.mjs``), for the tests that check them."""

    def __init__(self, seen: dict[str, dict[str, Any]], started: float) -> None:
        self.seen = seen
        self.started = started  # the screenshots written since are this run's

    def __call__(self, scenario: str) -> dict[str, Any]:
        """What ``scenario`` ("ai5/stop", "agentDemo") saw, once it ran without a failure or a
        page error."""
        seen = self.seen[scenario]
        assert "failure" not in seen, seen["failure"]
        assert not seen["pageErrors"], seen["pageErrors"]
        return seen

    def screenshots(self, *names: str) -> None:
        """Each of e2e-artifacts/<name>.png is a picture (more than 10 kB) taken by this run."""
        for name in names:
            shot = ARTIFACTS / f"{name}.png"
            assert shot.stat().st_size > 10_000 and shot.stat().st_mtime >= self.started, shot


@pytest.fixture(scope="module")
def driven(servers: dict[str, str]) -> Observed:
    """One run of the driver: every scenario of both builds and the agent demo, at once."""
    ARTIFACTS.mkdir(exist_ok=True)
    config = {
        "artifacts": str(ARTIFACTS),
        "builds": [
            {"build": b, "appUrl": f"{servers['app']}/{b}/index.html", "api": servers[b]}
            for b in BUILDS
        ],
        "agentDemo": {"api": servers["agentDemo"]},
        "busyDemo": {"api": servers["busyDemo"]},
    }
    started = time.time() - 1  # file times may trail the clock by a tick
    return Observed(page_script("e2e/run.mjs", config), started)


def page_script(script: str, config: dict[str, Any]) -> Any:
    """A Node script of the example driving Chromium: what its last output line says."""
    run = subprocess.run(
        ["node", script, json.dumps(config)],
        cwd=APP,
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "CHROMIUM_PATH": CHROMIUM},
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.fixture
def observed(driven: Observed) -> Observed:
    """The shared browser run, counted as this test's use of Chromium (tests/components.py)."""
    used("chromium")
    return driven


@pytest.fixture(params=BUILDS)
def build(request: pytest.FixtureRequest) -> str:
    """The app's build: ai5 (AI SDK 5) or ai7 (AI SDK 7)."""
    return str(request.param)


@pytest.fixture
def gateway(build: str, servers: dict[str, str]) -> str:
    """The URL of the demo gateway the build's app talks to."""
    return servers[build]


def upstream_events(gateway: str, session: str) -> dict[str, list[dict[str, Any]]]:
    """The demo upstream's log of a session: the events it ``sent``, the frames it ``received``."""
    log: dict[str, list[dict[str, Any]]] = httpx.get(
        f"{gateway}/demo/upstream-events/{session}", trust_env=False
    ).json()
    return log


def test_an_answer_streams_and_a_follow_up_joins_it(build: str, observed: Observed) -> None:
    chat = observed(f"{build}/chat")
    assert chat["sdk"] == f"AI SDK {build[-1]}"

    first = chat["firstTurn"]
    # rendered progressively: many lengths, over most of the time the demo takes to stream it
    assert first["distinctLengths"] >= 10 and first["renderedOverMs"] > 500, first
    assert first["text"].startswith("You said: *Explain chunkbridge*")
    assert first["text"].endswith("Ask me anything else to see another turn.")
    (states,) = first["toolStates"].values()
    assert states[0] in ("input-streaming", "input-available")
    assert states[-1] == "output-available" and "input-available" in states
    assert json.loads(first["toolOutput"]) == {"matches": 3, "top": "README.md#usage"}

    second = chat["secondTurn"]
    assert second["users"] == 2 and second["assistants"] == 2
    assert second["userTexts"] == ["Explain chunkbridge", "And a follow-up question"]
    assert second["lastText"].startswith("You said: *And a follow-up question*")
    observed.screenshots(f"react-usechat-{build}")
    print(f"\nscreenshots of the finished chats ({build}): {ARTIFACTS}/react-usechat-{build}*.png")


def test_stop_ends_the_answer(build: str, gateway: str, observed: Observed) -> None:
    stop = observed(f"{build}/stop")
    assert stop["status"] == "ready" and stop["readyAfterMs"] < 3000
    # read once the upstream's turn was over and the browser's stream closed
    assert stop["textLater"] == stop["textAtStop"], "nothing may arrive after Stop"
    log = upstream_events(gateway, stop["session"])
    assert {"type": "abort"} in log["received"], "the upstream must receive the abort frame"
    finals = [e for e in log["sent"] if e.get("type") == "message.finalize"]
    assert [e["reason"] for e in finals] == ["canceled"], "the abort must end the turn"


def test_an_upstream_error_shows(build: str, observed: Observed) -> None:
    error = observed(f"{build}/error")
    assert "The demo agent failed on purpose (you asked)." in error["text"]
    assert error["status"] == "error"


def test_a_reload_resumes_the_running_answer(build: str, gateway: str, observed: Observed) -> None:
    resumed = observed(f"{build}/resume")  # a reload mid-answer: it completes in the new page
    assert resumed["status"] == "ready" and resumed["assistants"] == 1
    sent = upstream_events(gateway, resumed["session"])["sent"]
    full = "".join(e["delta"] for e in sent if e.get("type") == "message.part.text-delta")
    assert resumed["text"] == full and len(full) > resumed["beforeReload"], resumed
    observed.screenshots(f"react-usechat-{build}-resumed")


def test_a_stored_chat_comes_back_on_reload(build: str, gateway: str, observed: Observed) -> None:
    stored = observed(f"{build}/stored")
    session = stored["session"]
    messages = httpx.get(  # the gateway's copy of the stored chat, after the page's last reload
        f"{gateway}/api/sessions/{session}/chat/chat-{session}/messages", trust_env=False
    ).json()

    def texts(role: str) -> list[str]:
        return [
            "".join(p["text"] for p in m["parts"] if p["type"] == "text")
            for m in messages
            if m["role"] == role
        ]

    mid, live, end = stored["mid"], stored["live"], stored["end"]
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
    observed.screenshots(f"react-usechat-{build}-reload-mid", f"react-usechat-{build}-reload-end")


def test_a_question_is_answered_in_the_page(build: str, gateway: str, observed: Observed) -> None:
    question = observed(f"{build}/question")  # the agent continued in the same message
    assert question["asked"] == "Which color do you prefer?"
    assert question["status"] == "ready" and question["assistants"] == 1, question
    assert question["answered"] == '"green"'
    assert question["text"] == "Before I answer, one question.You chose **green**: a fine choice."
    received = upstream_events(gateway, question["session"])["received"]
    answers = [f for f in received if f.get("type") == "answer"]
    assert answers == [
        {"type": "answer", "questionId": answers[0]["questionId"], "answer": "green"}
    ]
    observed.screenshots(f"react-usechat-{build}-question-asked", f"react-usechat-{build}-question")


def test_a_tool_call_approved_and_one_denied(build: str, gateway: str, observed: Observed) -> None:
    approval = observed(f"{build}/approval")
    assert approval["status"] == "ready" and approval["assistants"] == 2, approval
    assert approval["approved"]["state"] == "output-available"
    assert approval["approved"]["text"].endswith("Done: the branch is deleted.")
    assert approval["denied"]["text"].endswith("Understood, I left the branch alone.")
    received = upstream_events(gateway, approval["session"])["received"]
    decisions = [f for f in received if f.get("type") == "approval"]
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
    observed.screenshots(
        f"react-usechat-{build}-approval-requested", f"react-usechat-{build}-approval"
    )


def test_the_gateway_demo_page(build: str, observed: Observed) -> None:
    """The gateway's own page (``make demo``): a question answered, an approval approved, and
    after a reload the stored chat."""
    page = observed(f"{build}/demoPage")
    assert page["live"] == {"messages": 4, "status": "finished (stop)"}, page["live"]
    reloaded = page["reloaded"]
    assert reloaded["messages"] == 4, reloaded
    assert "You chose **blue**: a fine choice." in reloaded["texts"][1], reloaded
    observed.screenshots(
        f"react-usechat-{build}-demo-page", f"react-usechat-{build}-demo-page-reloaded"
    )


def test_the_agent_demo_page_in_headless_chromium(observed: Observed) -> None:
    """`make demo AGENT=1 TELEMETRY=1` in a real browser: the page shows each gateway-run tool
    call and its result, an approval given with the page's button runs the destructive tool, and
    the trace panel draws the request's trace — joined to the page's own ``traceparent``."""
    result = observed("agentDemo")
    assert "gateway-run MCP tools" in result["header"]
    tools = result["tools"]
    assert tools[0].startswith("add") and "output-available" in tools[0] and "5" in tools[0]
    assert tools[1].startswith("multiply") and "→ 20" in tools[1]  # the result's text
    # each tool's icon is drawn by the page (an inline SVG), not a glyph of an emoji font
    icons = result["toolIcons"]
    assert len(icons) == len(tools) and all(i["tag"] == "svg" for i in icons), icons
    assert all(i["width"] == i["height"] == 14 for i in icons), icons
    assert result["status"] == "finished (stop)", result
    assert any("note 1 saved" in text for text in result["texts"]), result["texts"]
    # the first question's trace, parents before children: the page's request, the turn, a
    # model call per step (the demo model's own route below each), the two tool calls
    names = result["trace"]
    assert names[:2] == ["POST /api/sessions/{session_id}/chat", "chunkbridge.turn"], names
    assert names.count("chat claude-sonnet-4-5") == 3, names
    assert "execute_tool add" in names and "execute_tool multiply" in names, names
    assert names.index("execute_tool add") < names.index("execute_tool multiply")
    observed.screenshots("demo-agent", "demo-agent-trace")


def test_the_demo_page_sends_while_an_answer_streams(
    servers: dict[str, str], observed: Observed
) -> None:
    """`make demo BUSY=queue` in a real browser: Send stays on while a slow answer streams, the
    second message waits its turn with its place shown, the sign goes when it runs, and both
    answers come whole and in order (the upstream ran the second turn after the first)."""
    busy = observed("busyDemo")
    assert "busy = queue" in busy["header"], busy["header"]
    assert busy["sendEnabled"] is True
    # the sign under the second (waiting) answer only: user, answer, user, waiting answer
    assert busy["waiting"] == [
        None,
        None,
        None,
        "waiting its turn: position 1 (1 runs next)",
    ], busy["waiting"]
    assert "Ask me anything else" not in busy["firstWhileWaiting"], "the first had ended"
    assert busy["secondRunning"]["waiting"] == 0, busy["secondRunning"]
    assert busy["status"] == "finished (stop)", busy
    assert busy["roles"] == ["msg user", "msg assistant", "msg user", "msg assistant"]
    first, second = busy["texts"][1], busy["texts"][3]
    assert first.startswith("You said: *slow answer please*"), first
    assert first.endswith("Ask me anything else to see another turn."), first
    assert second.startswith("You said: *And a second one*"), second
    assert second.endswith("Ask me anything else to see another turn."), second
    # the upstream: the second turn's events all after the first turn's end (it waited)
    sent = upstream_events(servers["busyDemo"], busy["session"])["sent"]
    turns = [e["turnId"] for e in sent if "turnId" in e]
    finals = [i for i, e in enumerate(sent) if e.get("type") == "message.finalize"]
    assert len(finals) == 2 and [sent[i]["reason"] for i in finals] == ["end_turn"] * 2
    assert turns == sorted(turns) and len(set(turns)) == 2, turns
    assert all(e.get("turnId") != turns[-1] for e in sent[: finals[0] + 1]), sent
    observed.screenshots("demo-busy-waiting", "demo-busy")
