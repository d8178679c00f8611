"""Meta mode: the model is offered four meta-tools (list, search, schema, call) instead of every
tool of a server, and the app still sees each real call as its own ``dynamic-tool`` part, with
its own approval — for every provider dialect, judged by the real ai 5, 6 and 7 clients."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson
import pytest

from chunkbridge.gateway.tool_settings import ToolServerSettings
from chunkbridge.gateway.tools.catalog import RemoteTool, build_catalog
from chunkbridge.gateway.tools.meta import answer
from chunkbridge.protocol_specs import meta_tools
from chunkbridge.translators.core.steps import StepJoin
from tests.agent_responses import PROVIDER_DIALECTS
from tests.conftest import ToolServer
from tests.gateway_harness import post, user_body
from tests.helpers import result_of
from tests.test_agent_loop import Model, agent_gateway, parts_of, steps_script

# -- the answers and the split, without I/O --------------------------------------------------------


def catalog() -> dict[str, Any]:
    listed = {
        "math": [
            RemoteTool("add", "Add two numbers.\nIntegers only.", {"type": "object"}, True),
            RemoteTool("multiply", "Multiply two numbers.", {"type": "object"}, True),
        ],
        "files": [RemoteTool("read_file", "Read a file by path.", {"type": "object"}, True)],
    }
    settings = {
        "math": ToolServerSettings(command="x", mode="meta"),
        "files": ToolServerSettings(command="y"),  # direct: its tools are definitions
    }
    return build_catalog(listed, settings)


def test_the_meta_tools_list_search_and_describe_only_the_meta_servers_tools() -> None:
    tools = catalog()
    listed = answer(meta_tools.LIST, {}, tools).output["tools"]
    assert listed == [
        {"name": "add", "server": "math", "summary": "Add two numbers."},
        {"name": "multiply", "server": "math", "summary": "Multiply two numbers."},
    ]
    assert "no server 'nope'" in answer(meta_tools.LIST, {"server": "nope"}, tools).error
    found = answer(meta_tools.SEARCH, {"query": "multiply numbers"}, tools).output["tools"]
    assert [t["name"] for t in found] == ["multiply", "add"]  # a name match ranks first
    assert answer(meta_tools.SEARCH, {"query": "file"}, tools).output == {"tools": []}
    assert answer(meta_tools.SEARCH, {}, tools).error is not None
    described = answer(meta_tools.SCHEMA, {"names": ["add", "read_file"]}, tools).output
    assert described["add"] == {
        "description": "Add two numbers.\nIntegers only.",
        "inputSchema": {"type": "object"},
    }
    assert "no such tool" in described["read_file"]["error"]
    # a tools_call the stream core left whole is a batch it could not read
    assert "list of at most 16" in answer(meta_tools.CALL, {"calls": 3}, tools).error


class Items:
    """A dialect translator that returns what it is fed."""

    TERMINAL_FRAMES: frozenset[str] = frozenset()
    stats: dict[str, int] = {}  # noqa: RUF012 - read only
    text_id = None

    def feed(self, event: Any) -> list[Any]:
        return list(event)


def split(*items: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    guard = SimpleNamespace(started=True, in_step=True)
    join = StepJoin(Items(), frozenset({*meta_tools.NAMES, "add"}), guard)  # type: ignore[arg-type]
    out = [chunk for item in items for chunk in join.feed([item])]
    return out, join.take_ready()


def test_a_batch_is_shown_and_run_as_a_call_per_tool() -> None:
    start = {"type": "tool-input-start", "toolCallId": "c", "toolName": "tools_call"}
    delta = {"type": "tool-input-delta", "toolCallId": "c", "inputTextDelta": '{"calls'}
    calls = [{"tool": "add", "arguments": {"a": 1}}, {"tool": "ask_user", "arguments": {}}]
    done = {**start, "type": "tool-input-available", "input": {"calls": calls}}
    out, ready = split(start, delta, done)
    assert [(c["type"], c["toolCallId"], c["toolName"]) for c in out] == [
        ("tool-input-start", "c-0", "add"),
        ("tool-input-available", "c-0", "add"),
        ("tool-input-start", "c-1", "ask_user"),
        ("tool-input-available", "c-1", "ask_user"),
    ]
    assert all(c["dynamic"] for c in out)
    assert [(r.call_id, r.name, r.input, r.batched) for r in ready] == [
        ("c-0", "add", {"a": 1}, True),
        ("c-1", "ask_user", {}, True),
    ]
    # no batch: the call stays whole, for its error result
    out, ready = split(start, {**done, "input": {"calls": "add"}})
    assert [(c["type"], c["toolName"]) for c in out] == [
        ("tool-input-start", "tools_call"),
        ("tool-input-available", "tools_call"),
    ]
    assert [(r.name, r.batched) for r in ready] == [("tools_call", False)]
    # unreadable input: the held start comes before the error
    error = {**start, "type": "tool-input-error", "input": "{", "errorText": "bad JSON"}
    out, ready = split(start, error)
    assert [c["type"] for c in out] == ["tool-input-start", "tool-input-error"] and not ready


def test_an_app_tool_in_a_batch_is_not_the_apps_call() -> None:
    from chunkbridge.kit import counter_ids
    from chunkbridge.translators.core.agent_loop import AgentLoop, CallKind, ToolPolicy

    loop = AgentLoop(ToolPolicy({"add": False}, frozenset({"ask_user"})), 10, ids=counter_ids())
    assert loop.call("ask_user", batched=True) is CallKind.UNKNOWN
    assert loop.call("ask_user") is CallKind.APP


def test_a_server_tool_named_like_a_meta_tool_is_refused_at_start_up() -> None:
    from chunkbridge.gateway.config import ConfigError
    from chunkbridge.gateway.tools import ToolSources
    from chunkbridge.gateway.turn.agent_setup import agent_setup
    from chunkbridge.translators.dialects.anthropic_messages import AnthropicSettings

    tools = ToolSources({"big": ToolServerSettings(command="x", mode="meta")})
    tools.catalog = build_catalog(
        {"big": [RemoteTool("tools_list", "", {}), RemoteTool("add", "", {})]}, tools.settings
    )
    with pytest.raises(ConfigError, match="tools_list is the name of a meta-tool"):
        agent_setup("anthropic-messages", AnthropicSettings(), tools, 10, 8)
    tools.catalog.pop("tools_list")
    setup = agent_setup("anthropic-messages", AnthropicSettings(), tools, 10, 8)
    assert set(setup.settings.tools) == meta_tools.NAMES  # four definitions, not the tools
    assert setup.names == {*meta_tools.NAMES, "add"}


# -- through the gateway ---------------------------------------------------------------------------

BATCH = [
    {"tool": "add", "arguments": {"a": 2, "b": 3}},
    {"tool": "multiply", "arguments": {"a": 4, "b": 5}},
]
FIND_THEN_CALL: list[tuple[str, list[Any]]] = [
    ("Looking.", [("c1", "tools_search", {"query": "add multiply"})]),
    ("Both at once.", [("c2", "tools_call", {"calls": BATCH})]),
    ("5 and 20.", []),
]


@pytest.mark.parametrize("dialect", PROVIDER_DIALECTS)
async def test_meta_mode_offers_four_tools_and_shows_each_real_call(
    dialect: str, tool_server: ToolServer, real_clients: Any
) -> None:
    model = Model(steps_script(dialect, FIND_THEN_CALL))
    async with agent_gateway(model, dialect, tool_server.settings(mode="meta")) as base:
        response = await post(base, "s1", user_body("2+3 and 4×5?", id="chat-1"))
    assert response.status_code == 200, response.text
    found = {
        "tools": [
            {"name": "add", "server": "math", "summary": "Add two numbers."},
            {"name": "multiply", "server": "math", "summary": "Multiply two numbers."},
        ]
    }
    expected = [
        ("step-start", None),
        ("text", "Looking."),
        ("dynamic-tool", ("tools_search", "output-available", found)),
        ("step-start", None),
        ("text", "Both at once."),
        ("dynamic-tool", ("add", "output-available", {"result": 5})),
        ("dynamic-tool", ("multiply", "output-available", {"result": 20})),
        ("step-start", None),
        ("text", "5 and 20."),
    ]
    for major, verdict in real_clients.check(response.content).items():
        assert verdict.ok, (major, verdict.fatal, response.text)
        assert parts_of(verdict.message) == expected, major
        ids = [p["toolCallId"] for p in verdict.message["parts"] if "toolCallId" in p]
        assert ids == ["c1", "c2-0", "c2-1"]
    # every request offered the four meta-tools, not the server's tools
    for request in model.requests:
        offered = orjson.dumps(request["tools"])
        for name in meta_tools.NAMES:
            assert name.encode() in offered
        assert b"delete_branch" not in offered
    # the last model call read the calls it made — its batch, not calls of tools it was never
    # offered — and the batch's one result
    request = model.requests[2]
    offered = set(offered_tools(dialect, request))
    calls = model_calls(dialect, request)
    assert [name for name, _ in calls] == ["tools_search", "tools_call"]
    assert {name for name, _ in calls} <= offered
    assert calls[1][1] == {"calls": BATCH}
    heard = orjson.dumps({k: v for k, v in request.items() if k != "tools"})
    assert b"c2-0" not in heard and b"chunkbridge" not in heard
    if dialect != "gemini":  # (Gemini pairs calls by name)
        assert b'"c2"' in heard
    for piece in (b"[1] add", b"[2] multiply", b"20"):  # one result, each call's part named
        assert piece in heard, piece
    assert len(model.requests) == 3


def offered_tools(dialect: str, request: dict[str, Any]) -> list[str]:
    """The names of the tools a provider request offers the model."""
    tools = request.get("tools", [])
    if dialect == "gemini":
        return [d["name"] for t in tools for d in t.get("functionDeclarations", [])]
    if dialect == "openai-chat":
        return [t["function"]["name"] for t in tools]
    return [t["name"] for t in tools]


def model_calls(dialect: str, request: dict[str, Any]) -> list[tuple[str, Any]]:
    """The tool calls a provider request's history says the model made: (name, input)."""
    if dialect == "anthropic-messages":
        blocks = [b for m in request["messages"] for b in m["content"] if isinstance(b, dict)]
        return [(b["name"], b["input"]) for b in blocks if b.get("type") == "tool_use"]
    if dialect == "openai-responses":
        items = [i for i in request["input"] if i.get("type") == "function_call"]
        return [(i["name"], orjson.loads(i["arguments"])) for i in items]
    if dialect == "openai-chat":
        calls = [c for m in request["messages"] for c in m.get("tool_calls") or []]
        return [(c["function"]["name"], orjson.loads(c["function"]["arguments"])) for c in calls]
    parts = [p for c in request["contents"] for p in c["parts"] if "functionCall" in p]
    return [(p["functionCall"]["name"], p["functionCall"]["args"]) for p in parts]


ARCHIVE_AND_ADD: list[tuple[str, list[Any]]] = [
    (
        "Adding and archiving.",
        [
            (
                "c1",
                "tools_call",
                {
                    "calls": [
                        {"tool": "add", "arguments": {"a": 1, "b": 1}},
                        {"tool": "archive", "arguments": {"name": "q4"}},
                    ]
                },
            )
        ],
    ),
    ("Done.", []),
]


@pytest.mark.parametrize(
    ("major", "approved", "history"),
    [(5, True, None), (5, False, None), (7, True, None), (7, False, None), (7, True, "stored")],
)
async def test_each_call_of_a_batch_has_its_own_approval(
    major: int,
    approved: bool,
    history: str | None,
    tool_server: ToolServer,
    real_clients: Any,
    tmp_path: Path,
) -> None:
    """… and the continuation's model call reads the batch it made, from the client's copy of
    the message or (``history = stored``) from the store's."""
    model = Model(steps_script("anthropic-messages", ARCHIVE_AND_ADD))
    tools = tool_server.settings(mode="meta")
    stored = {} if history is None else {"history": history, "store": "sqlite"}
    if stored:
        stored["store_path"] = tmp_path / "chats.sqlite3"
    async with agent_gateway(model, "anthropic-messages", tools, target=major, **stored) as base:
        api = f"{base}/api/sessions/s-{major}/chat"
        answers = [{"kind": "approval", "approved": approved, "reason": "not now"}]
        result = await real_clients.chat_loop(api, major, "archive q4", answers)
    calls = tool_server.calls()
    assert result["error"] is None and result["status"] == "ready", result
    assert calls == (["q4"] if approved else [])  # the destructive call asked; add did not
    message = result["messages"][-1]
    tools_seen = {p["toolName"]: p for p in message["parts"] if p.get("type") == "dynamic-tool"}
    assert set(tools_seen) == {"add", "archive"}
    assert result_of(tools_seen["add"]["output"]) == {"result": 2}
    archive = tools_seen["archive"]
    if approved:
        assert archive["state"] == "output-available"
    else:
        assert archive["state"] == ("output-error" if major == 5 else "output-denied")
    assert len(model.requests) == 2
    # the continuation's model call read its one batch call (regrouped from the parts the
    # client sent back) and one result of it
    request = model.requests[1]
    calls = model_calls("anthropic-messages", request)
    assert calls == [("tools_call", ARCHIVE_AND_ADD[0][1][0][2])]
    results = [
        b for m in request["messages"] for b in m["content"] if b.get("type") == "tool_result"
    ]
    assert [r["tool_use_id"] for r in results] == ["c1"]
    texts = [block["text"] for block in results[0]["content"]]
    assert texts[:3] == ["[1] add", "2", "[2] archive"]
    if approved:
        assert texts[3:] == ["archived q4"]
    else:
        assert "denied" in texts[3] and len(texts) == 4, texts  # (ai 5: an error part)
