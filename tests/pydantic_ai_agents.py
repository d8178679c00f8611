"""Real pydantic-ai agents for the ``pydantic-ai`` dialect's tests and recordings: a
``FunctionModel`` scripted per scenario (no network), the agent's own tools, a tool the model
provider runs, approvals, deferred calls, structured output and custom events:
``SCENARIOS[name].run()`` is what an app hands chunkbridge."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import BaseModel
from pydantic_ai import Agent, CustomEvent, ModelRetry, RunContext
from pydantic_ai.exceptions import CallDeferred
from pydantic_ai.messages import ModelMessage, NativeToolCallPart, NativeToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaThinkingPart, DeltaToolCall, FunctionModel
from pydantic_ai.tools import DeferredToolRequests
from pydantic_ai.usage import UsageLimits


def _returns(messages: list[ModelMessage]) -> list[Any]:
    return [p for p in messages[-1].parts if p.part_kind == "tool-return"]


def _prompt(messages: list[ModelMessage]) -> str:
    for message in reversed(messages):
        for part in message.parts:
            if part.part_kind == "user-prompt" and isinstance(part.content, str):
                return part.content
    return ""


#: A web search the model provider runs: what pydantic-ai sends back to that provider with the
#: next run's history (the call's item id, the provider's name and details of both parts).
SEARCH_CALL = NativeToolCallPart(
    tool_name="web_search",
    args={"query": "paris"},
    tool_call_id="ws_1",
    id="ws_1",
    provider_name="function",
    provider_details={"status": "completed"},
)
SEARCH_RETURN = NativeToolReturnPart(
    tool_name="web_search",
    content=[{"url": "https://paris.example", "title": "Paris"}],
    tool_call_id="ws_1",
    provider_name="function",
    provider_details={"sources": 1},
)


async def _model(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
    """The scripted model: the newest prompt's first word picks the script; a tool return in
    the newest request is answered with text."""
    returns = _returns(messages)
    prompt = _prompt(messages)
    if returns:
        retried = [r for r in returns if r.outcome == "retried"]
        if retried:  # called again, the arguments fixed
            name = retried[0].tool_name
            fixed = {"lookup": '{"key": "b"}', "get_weather": '{"city": "Paris"}'}[name]
            yield {0: DeltaToolCall(name=name, json_args=fixed, tool_call_id="c9")}
            return
        yield "Done: "
        yield ", ".join(str(r.content) for r in returns) + "."
        return
    word = prompt.split()[0] if prompt else ""
    if word == "weather":
        yield {0: DeltaThinkingPart(content="The user wants ")}
        yield {0: DeltaThinkingPart(content="the weather.", signature="sig-1")}
        yield {1: DeltaToolCall(name="get_weather", json_args='{"city": ', tool_call_id="c1")}
        yield {1: DeltaToolCall(json_args='"Paris"}')}
    elif word == "both":
        yield "Checking both."
        yield {
            1: DeltaToolCall(name="get_weather", json_args='{"city": "Oslo"}', tool_call_id="c1")
        }
        yield {2: DeltaToolCall(name="get_time", json_args='{"zone": "CET"}', tool_call_id="c2")}
    elif word == "lookup":
        yield {0: DeltaToolCall(name="lookup", json_args='{"key": "a"}', tool_call_id="c8")}
    elif word == "fail":
        yield "Starting the answer"
        raise RuntimeError("the model is down")
    elif word == "explode":
        yield {0: DeltaToolCall(name="explode", json_args="{}", tool_call_id="c3")}
    elif word == "delete":
        yield "Deleting needs your approval."
        yield {
            1: DeltaToolCall(name="delete_file", json_args='{"path": "/tmp/x"}', tool_call_id="c4")
        }
    elif word == "confirm":
        yield {0: DeltaToolCall(name="confirm", json_args='{"question": "Go?"}', tool_call_id="c5")}
    elif word == "forecast":
        args = '{"city": "Rome", "celsius": 21}'
        yield {0: DeltaToolCall(name="final_result", json_args=args, tool_call_id="c6")}
    elif word == "progress":
        yield {0: DeltaToolCall(name="crunch", json_args='{"n": 2}', tool_call_id="c7")}
    elif word == "unicode":
        yield "héllo 👋🏽 — "
        yield "x" * 20000
        yield " 終"
    elif word == "broken":
        yield {0: DeltaToolCall(name="get_weather", json_args='{"city": "Par', tool_call_id="c10")}
    elif word == "search":
        yield {0: replace(SEARCH_CALL)}  # copies: the run keeps the parts it is given
        yield {1: replace(SEARCH_RETURN)}
        yield "Found it."
    elif word == "loop":
        yield {0: DeltaToolCall(name="get_time", json_args='{"zone": "UTC"}', tool_call_id="c11")}
    else:
        yield "Hello "
        yield "from pydantic-ai."


MODEL = FunctionModel(stream_function=_model, model_name="scripted")


class Forecast(BaseModel):
    city: str
    celsius: int


@dataclass(kw_only=True)
class CrunchProgress(CustomEvent):
    done: int
    total: int


def make_agent(output_type: Any = str) -> Agent[None, Any]:
    agent: Agent[None, Any] = Agent(MODEL, output_type=output_type)

    # sequential: the results come in the calls' order (the recordings stay the same)
    @agent.tool_plain(sequential=True)
    def get_weather(city: str) -> dict[str, str]:
        return {"city": city, "sky": "sunny"}

    @agent.tool_plain(sequential=True)
    def get_time(zone: str) -> str:
        return f"12:00 {zone}"

    @agent.tool_plain(retries=2)
    def lookup(key: str) -> str:
        if key == "a":
            raise ModelRetry("no entry 'a'; try 'b'")
        return f"entry {key}"

    @agent.tool_plain
    def explode() -> str:
        raise RuntimeError("the tool blew up")

    @agent.tool_plain(requires_approval=True)
    def delete_file(path: str) -> str:
        return f"deleted {path}"

    @agent.tool_plain
    def confirm(question: str) -> str:
        raise CallDeferred  # the app asks the user and answers the call

    @agent.tool
    async def crunch(ctx: RunContext[None], n: int) -> str:
        for done in range(1, n + 1):
            await ctx.emit(CrunchProgress(done=done, total=n))
        return f"crunched {n}"

    return agent


AGENT = make_agent()
DEFERRING = make_agent([str, DeferredToolRequests])
STRUCTURED = make_agent(Forecast)


@dataclass(frozen=True)
class Scenario:
    agent: Agent[None, Any]
    prompt: str
    options: dict[str, Any] = field(default_factory=dict)

    def run(self) -> Any:
        """What an app hands chunkbridge: ``agent.run_stream_events(...)``."""
        return self.agent.run_stream_events(self.prompt, **self.options)


#: recording name → the run.
SCENARIOS: dict[str, Scenario] = {
    "plain-text": Scenario(AGENT, "hi"),
    "reasoning-and-tool": Scenario(AGENT, "weather in Paris?"),
    "parallel-tools": Scenario(AGENT, "both please"),
    "tool-retry": Scenario(AGENT, "lookup a"),
    "model-error-mid-text": Scenario(AGENT, "fail now"),
    "tool-exception": Scenario(AGENT, "explode it"),
    "approval-required": Scenario(DEFERRING, "delete /tmp/x"),
    "deferred-call": Scenario(DEFERRING, "confirm it"),
    "structured-output": Scenario(STRUCTURED, "forecast Rome"),
    "custom-events": Scenario(AGENT, "progress"),
    "unicode-and-large-delta": Scenario(AGENT, "unicode"),
    "invalid-tool-arguments": Scenario(AGENT, "broken args"),
    "native-tool": Scenario(AGENT, "search paris"),
    "usage-limit": Scenario(AGENT, "loop", {"usage_limits": UsageLimits(request_limit=1)}),
}
