"""Real OpenAI Agents SDK runs for the ``openai-agents`` dialect's tests and recordings: the SDK's
own ``ScriptedModel`` (no network), fed exact Responses API stream events per model call, with
function tools, a handoff, an approval, failures. ``SCENARIOS[name]()`` is what an app hands
chunkbridge: ``Runner.run_streamed(...).stream_events()`` (a fresh agent each time: a scripted
model's calls are used up)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any, get_args

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.testing import ModelStep, ScriptedModel
from openai.types.responses import ResponseStreamEvent
from pydantic import BaseModel

set_tracing_disabled(True)  # no trace export (it would reach for the network)

#: Responses API stream event ``type`` → its class.
_CLASSES = {
    cls.model_fields["type"].annotation.__args__[0]: cls
    for cls in get_args(get_args(ResponseStreamEvent)[0])
}


def _event(fields: dict[str, Any]) -> Any:
    return _CLASSES[fields["type"]].model_validate(fields)


_USAGE = {
    "input_tokens": 10,
    "output_tokens": 5,
    "total_tokens": 15,
    "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
    "output_tokens_details": {"reasoning_tokens": 0},
}


def _response(status: str, output: list[Any]) -> dict[str, Any]:
    response = {
        "id": "resp-1",
        "created_at": 0,
        "model": "scripted-gpt",
        "object": "response",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "status": status,
    }
    return {**response, "usage": _USAGE} if status == "completed" else response


def _item(
    kind: str, item_id: str, *rest: Any
) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """One output item: (added, deltas, done) as event fields."""
    if kind == "text" or kind == "refusal":
        (pieces,) = rest
        full = "".join(pieces)
        delta_type = "response.output_text.delta" if kind == "text" else "response.refusal.delta"
        extra = {"logprobs": []} if kind == "text" else {}
        deltas = [
            {"type": delta_type, "item_id": item_id, "content_index": 0, "delta": p, **extra}
            for p in pieces
        ]
        content = (
            {"type": "output_text", "text": full, "annotations": []}
            if kind == "text"
            else {"type": "refusal", "refusal": full}
        )
        message = {"id": item_id, "type": "message", "role": "assistant"}
        return (
            {**message, "status": "in_progress", "content": []},
            deltas,
            {**message, "status": "completed", "content": [content]},
        )
    if kind == "reasoning":
        (pieces,) = rest
        deltas = [
            {
                "type": "response.reasoning_summary_text.delta",
                "item_id": item_id,
                "summary_index": 0,
                "delta": p,
            }
            for p in pieces
        ]
        summary = [{"type": "summary_text", "text": "".join(pieces)}]
        return (
            {"id": item_id, "type": "reasoning", "summary": []},
            deltas,
            {"id": item_id, "type": "reasoning", "summary": summary},
        )
    name, pieces = rest
    call = {"id": item_id, "type": "function_call", "call_id": item_id, "name": name}
    deltas = [
        {"type": "response.function_call_arguments.delta", "item_id": item_id, "delta": p}
        for p in pieces
    ]
    return {**call, "arguments": ""}, deltas, {**call, "arguments": "".join(pieces)}


def model_call(*items: tuple[Any, ...], fail: Exception | None = None) -> ModelStep:
    """One model call streaming ``items`` (``("text", id, [pieces])``, ``("reasoning", id,
    [pieces])``, ``("refusal", id, [pieces])``, ``("call", call_id, name, [argument pieces])``);
    ``fail``: raised after the first item's deltas, before the response completes."""

    async def events(_call: Any) -> AsyncIterator[Any]:
        n = 0

        def event(fields: dict[str, Any]) -> Any:
            nonlocal n
            n += 1
            return _event({**fields, "sequence_number": n})

        yield event({"type": "response.created", "response": _response("in_progress", [])})
        done_items = []
        for index, spec in enumerate(items):
            added, deltas, done = _item(*spec)
            yield event(
                {"type": "response.output_item.added", "item": added, "output_index": index}
            )
            for delta in deltas:
                yield event({**delta, "output_index": index})
            if fail is not None:
                raise fail
            yield event({"type": "response.output_item.done", "item": done, "output_index": index})
            done_items.append(done)
        yield event({"type": "response.completed", "response": _response("completed", done_items)})

    return ModelStep.stream(events)


def silent_call(*items: tuple[Any, ...]) -> ModelStep:
    """A model call that streams no deltas: only the finished items."""

    async def events(_call: Any) -> AsyncIterator[Any]:
        done_items = [_item(*spec)[2] for spec in items]
        created = {"type": "response.created", "response": _response("in_progress", [])}
        yield _event({**created, "sequence_number": 1})
        completed = {"type": "response.completed", "response": _response("completed", done_items)}
        yield _event({**completed, "sequence_number": 2})

    return ModelStep.stream(events)


@function_tool
def get_weather(city: str) -> dict[str, str]:
    """The weather in a city."""
    return {"city": city, "sky": "sunny"}


@function_tool
def get_time(zone: str) -> str:
    """The time in a zone."""
    return f"12:00 {zone}"


@function_tool
def explode() -> str:
    """Always fails."""
    raise RuntimeError("the tool blew up")


@function_tool(needs_approval=True)
def delete_file(path: str) -> str:
    """Deletes a file (after the user's approval)."""
    return f"deleted {path}"


class Forecast(BaseModel):
    city: str
    celsius: int


TOOLS = [get_weather, get_time, explode, delete_file]


def _agent(*steps: ModelStep, **options: Any) -> Agent[Any]:
    return Agent(name="Assistant", model=ScriptedModel(list(steps)), tools=TOOLS, **options)


def _run(make: Callable[[], Agent[Any]], prompt: str = "hi", **options: Any) -> Callable[[], Any]:
    return lambda: Runner.run_streamed(make(), prompt, **options).stream_events()


def _handoff() -> Agent[Any]:
    billing = Agent(
        name="Billing",
        handoff_description="Billing questions",
        model=ScriptedModel([model_call(("text", "m2", ["Billing here: ", "paid."]))]),
    )
    triage = ScriptedModel([model_call(("call", "c5", "transfer_to_billing", ["{}"]))])
    return Agent(name="Triage", model=triage, handoffs=[billing])


#: recording name → the events an app would hand over.
SCENARIOS: dict[str, Callable[[], Any]] = {
    "plain-text": _run(lambda: _agent(model_call(("text", "m1", ["Hello ", "from the agent."])))),
    "tool-call": _run(
        lambda: _agent(
            model_call(("call", "c1", "get_weather", ['{"city":', '"Paris"}'])),
            model_call(("text", "m1", ["It is ", "sunny."])),
        )
    ),
    "reasoning-then-text": _run(
        lambda: _agent(
            model_call(
                ("reasoning", "r1", ["The user ", "says hi."]), ("text", "m1", ["Hi there."])
            )
        )
    ),
    "parallel-tools": _run(
        lambda: _agent(
            model_call(
                ("text", "m0", ["Checking both."]),
                ("call", "c1", "get_weather", ['{"city":"Oslo"}']),
                ("call", "c2", "get_time", ['{"zone":"CET"}']),
            ),
            model_call(("text", "m1", ["Oslo is sunny at 12:00."])),
        )
    ),
    "handoff": _run(_handoff),
    "tool-failure": _run(
        lambda: _agent(
            model_call(("call", "c3", "explode", ["{}"])),
            model_call(("text", "m1", ["The tool failed."])),
        )
    ),
    "model-error-mid-text": _run(
        lambda: _agent(
            model_call(
                ("text", "m1", ["Starting the answer"]), fail=RuntimeError("the model is down")
            )
        )
    ),
    "max-turns": _run(
        lambda: _agent(
            model_call(("call", "c1", "get_time", ['{"zone":"UTC"}'])),
            model_call(("call", "c2", "get_time", ['{"zone":"UTC"}'])),
        ),
        max_turns=1,
    ),
    "approval-pending": _run(
        lambda: _agent(model_call(("call", "c4", "delete_file", ['{"path":"/tmp/x"}'])))
    ),
    "structured-output": _run(
        lambda: _agent(
            model_call(("text", "m1", ['{"city":"Rome",', '"celsius":21}'])), output_type=Forecast
        )
    ),
    "unstreamed-items": _run(
        lambda: _agent(
            silent_call(("reasoning", "r1", ["Quietly."]), ("text", "m1", ["All at once."]))
        )
    ),
    "refusal": _run(lambda: _agent(model_call(("refusal", "m1", ["I can't ", "help with that."])))),
    "unicode-and-large-delta": _run(
        lambda: _agent(model_call(("text", "m1", ["héllo 👋🏽 — ", "x" * 20000, " 終"])))
    ),
}
