"""openai-chat: chat.completion.chunk streams as real providers send them."""

from __future__ import annotations

from tests.helpers import of_type, text_of, to_sse, translate, types


def chunk(delta: dict | None = None, finish: str | None = None, **extra) -> dict:
    choices = (
        []
        if delta is None and finish is None
        else [{"index": 0, "delta": delta or {}, "finish_reason": finish}]
    )
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": choices,
        **extra,
    }


def call(index: int, id: str | None = None, name: str | None = None, args: str | None = None):
    function = {k: v for k, v in (("name", name), ("arguments", args)) if v is not None}
    delta = {"index": index, "function": function}
    if id:
        delta["id"] = id
    return {"tool_calls": [delta]}


def test_text_usage_and_done() -> None:
    usage = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    out, tr = translate(
        "openai-chat",
        [
            chunk({"role": "assistant", "content": ""}),
            chunk({"content": "Hi"}),
            chunk({}, "stop"),
            chunk(usage=usage),
            "[DONE]",
        ],
        close=False,
    )
    assert text_of(out) == "Hi" and tr.done
    assert out[0] == {"type": "start", "messageMetadata": {"model": "m"}}
    assert out[-1] == {
        "type": "finish",
        "finishReason": "stop",
        "messageMetadata": {
            "model": "m",
            "usage": {"promptTokens": 3, "completionTokens": 2, "totalTokens": 5},
        },
    }


def test_reasoning_fields_close_before_text() -> None:
    for field in ("reasoning_content", "reasoning"):
        out, _ = translate(
            "openai-chat",
            [chunk({field: "think"}), chunk({"content": "ans"}), chunk({}, "stop"), "[DONE]"],
        )
        assert types(out).index("reasoning-end") < types(out).index("text-start")


def test_streamed_parallel_tool_calls_with_late_name() -> None:
    out, _ = translate(
        "openai-chat",
        [
            chunk(call(0, "call_a", "weather", '{"city":')),
            chunk(call(1, "call_b", None, '{"q"')),
            chunk(call(0, args='"Paris"}')),
            chunk(call(1, name="search")),
            chunk(call(1, args=":1}")),
            chunk({}, "tool_calls"),
            "[DONE]",
        ],
    )
    starts = of_type(out, "tool-input-start")
    assert [(c["toolCallId"], c["toolName"]) for c in starts] == [
        ("call_a", "weather"),
        ("call_b", "search"),
    ]
    deltas = [(c["toolCallId"], c["inputTextDelta"]) for c in of_type(out, "tool-input-delta")]
    assert deltas == [
        ("call_a", '{"city":'),
        ("call_a", '"Paris"}'),
        ("call_b", '{"q"'),
        ("call_b", ":1}"),
    ]
    inputs = {c["toolCallId"]: c["input"] for c in of_type(out, "tool-input-available")}
    assert inputs == {"call_a": {"city": "Paris"}, "call_b": {"q": 1}}
    assert "tool-output-error" not in types(out)  # the client runs them
    assert out[-1]["finishReason"] == "tool-calls"


def test_invalid_arguments_become_tool_input_error_with_raw_text() -> None:
    out, _ = translate(
        "openai-chat",
        [
            chunk(call(0, "c", "f", '{"a": 1,')),
            chunk(call(1, "d", "g", "")),
            chunk({}, "tool_calls"),
        ],
    )
    (bad,) = of_type(out, "tool-input-error")
    assert bad["input"] == '{"a": 1,' and "not valid JSON" in bad["errorText"]
    assert of_type(out, "tool-input-available")[0]["input"] == {}


def test_finish_reason_mapping() -> None:
    for theirs, ours in (
        ("stop", "stop"),
        ("length", "length"),
        ("tool_calls", "tool-calls"),
        ("function_call", "tool-calls"),
        ("content_filter", "content-filter"),
        ("weird", "other"),
    ):
        out, _ = translate("openai-chat", [chunk({"content": "x"}), chunk({}, theirs)])
        assert out[-1]["finishReason"] == ours, theirs


def test_refusal_noise_and_extra_choices() -> None:
    out, tr = translate(
        "openai-chat",
        [
            chunk(prompt_filter_results=[{"prompt_index": 0}]),
            {
                "id": "c",
                "object": "chat.completion.chunk",
                "choices": [
                    {"index": 0, "delta": {"refusal": "No."}, "finish_reason": None},
                    {"index": 1, "delta": {"content": "other"}, "finish_reason": None},
                ],
            },
            chunk({}, "stop"),
            "[DONE]",
        ],
    )
    (start,) = [c for c in of_type(out, "text-start")]
    assert start["providerMetadata"] == {"openai": {"refusal": True}}
    assert text_of(out) == "No."
    assert tr.translator.stats["ignored-choice"] == 1 and tr.translator.stats["no-choices"] == 1


def test_error_mid_stream_settles_half_streamed_tool() -> None:
    out, _ = translate(
        "openai-chat",
        [
            chunk({"content": "x"}),
            chunk(call(0, "c", "f", "{")),
            {"error": {"message": "upstream 500"}},
        ],
    )
    assert types(out)[-5:] == [
        "tool-input-delta",
        "tool-output-error",
        "error",
        "finish-step",
        "finish",
    ]
    assert of_type(out, "error")[0]["errorText"] == "upstream 500"


def test_truncated_without_finish_reason_is_an_error() -> None:
    out, _ = translate("openai-chat", [chunk({"content": "cut"})])
    assert out[-1]["finishReason"] == "error" and "error" in types(out)


def test_stream_end_after_finish_reason_without_done_is_normal() -> None:
    out, _ = translate("openai-chat", [chunk({"content": "ok"}), chunk({}, "stop")])
    assert "error" not in types(out) and out[-1]["finishReason"] == "stop"


def test_tool_calls_in_real_clients(real_clients) -> None:
    out, _ = translate(
        "openai-chat",
        [
            chunk({"content": "Checking."}),
            chunk(call(0, "call_a", "weather", '{"city":"Paris"}')),
            chunk({}, "tool_calls"),
            "[DONE]",
        ],
    )
    for major, verdict in real_clients.check(to_sse(out)).items():
        assert verdict.ok, (major, verdict.fatal)
        (tool,) = verdict.parts("tool-weather")
        assert tool["state"] == "input-available" and tool["input"] == {"city": "Paris"}
        assert verdict.finish_reason == "tool-calls" and verdict.text() == "Checking."


def test_perplexity_citations_become_sources_once_each() -> None:
    def chunk(citations: list[str], content: str, finish: str | None = None) -> dict:
        choice = {"index": 0, "delta": {"content": content}, "finish_reason": finish}
        return {"id": "p1", "model": "sonar", "citations": citations, "choices": [choice]}

    a, b, c = "https://a.example", "https://b.example", "https://c.example"
    events = [chunk([a, b], "See [1]"), chunk([a, b], " and [2]"), chunk([a, b, c], ".", "stop")]
    chunks, _ = translate("openai-chat", events, target=7)
    assert [s["url"] for s in of_type(chunks, "source-url")] == [a, b, c]
    assert text_of(chunks) == "See [1] and [2]."
