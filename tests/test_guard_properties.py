"""Property: whatever chunk sequence goes in, the guard's output is a stream the clients accept.

Sequences mix every chunk type of ai 5/6/7 with small id pools (so ids collide, reopen and
cross steps), fields of the wrong shape, garbage values, and truncation (a random close reason).
The validator checks every example for its target; one test sends 60 examples per run through
the real ai 5, 6 and 7 clients and checks that every text delta fed before the end is in the
final message.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkbridge.translators.core.closing import CloseReason, CloseRequest
from tests.helpers import assert_valid_for, guard_all, to_sse

IDS = st.sampled_from(["a", "b", "c"])
CALLS = st.sampled_from(["c1", "c2", "c3"])
JSONISH = st.one_of(
    st.none(),
    st.integers(),
    st.text(max_size=5),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
MAYBE_BOOL = st.one_of(st.none(), st.booleans(), st.just("yes"))


def _c(type_: str, **fields: Any) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"type": st.just(type_), **fields})


def _opt(**fields: Any) -> dict[str, Any]:
    return fields


CHUNKS = [
    _c("start", messageId=st.one_of(st.just("m1"), st.none())),
    _c("start-step"),
    _c("finish-step"),
    _c("text-start", id=IDS),
    _c("text-delta", id=IDS, delta=st.just("")),
    _c("text-end", id=IDS),
    _c("reasoning-start", id=IDS),
    _c("reasoning-delta", id=IDS, delta=st.text(max_size=4)),
    _c("reasoning-end", id=IDS),
    _c(
        "tool-input-start",
        toolCallId=CALLS,
        toolName=st.sampled_from(["s", "t"]),
        dynamic=MAYBE_BOOL,
        providerExecuted=MAYBE_BOOL,
    ),
    _c("tool-input-delta", toolCallId=CALLS, inputTextDelta=st.sampled_from(["{", '"q":1', "}"])),
    _c(
        "tool-input-available",
        toolCallId=CALLS,
        toolName=st.just("s"),
        input=JSONISH,
        dynamic=MAYBE_BOOL,
    ),
    _c(
        "tool-input-error",
        toolCallId=CALLS,
        toolName=st.just("s"),
        input=JSONISH,
        errorText=st.just("bad"),
    ),
    _c(
        "tool-output-available",
        toolCallId=CALLS,
        output=JSONISH,
        dynamic=MAYBE_BOOL,
        preliminary=MAYBE_BOOL,
    ),
    _c("tool-output-error", toolCallId=CALLS, errorText=st.just("failed")),
    _c("tool-output-denied", toolCallId=CALLS),
    _c("tool-approval-request", approvalId=st.sampled_from(["p1", "p2"]), toolCallId=CALLS),
    _c("tool-approval-response", approvalId=st.sampled_from(["p1", "p2"]), approved=st.booleans()),
    _c("data-status", data=JSONISH, id=st.one_of(st.none(), IDS), transient=MAYBE_BOOL),
    _c("source-url", sourceId=IDS, url=st.just("https://example.com")),
    _c("file", url=st.just("data:,x"), mediaType=st.just("text/plain")),
    _c("reasoning-file", url=st.just("data:,x"), mediaType=st.just("text/plain")),
    _c("custom", kind=st.just("acme.x")),
    _c("steering-message", id=IDS, parts=st.just([{"type": "text", "text": "hi"}])),
    _c("message-metadata", messageMetadata=JSONISH),
    _c("abort", reason=st.one_of(st.none(), st.just("user"))),
    _c("error", errorText=st.text(max_size=8)),
    _c(
        "finish",
        finishReason=st.sampled_from(
            ["stop", "tool-calls", "interrupted", "unknown", "end_turn", None]
        ),
    ),
    st.sampled_from([None, 1, "x", [], {"type": 5}, {"type": "weird"}, {"type": "text-delta"}]),
]
RESET = _c("reset-step")
CLOSE_REASONS = st.sampled_from(list(CloseReason))


def _number_deltas(chunks: list[Any]) -> tuple[list[Any], list[str]]:
    """Give every text delta a unique token so it can be found in the final message."""
    tokens = []
    out = []
    for chunk in chunks:
        if isinstance(chunk, dict) and chunk.get("type") == "text-delta" and "delta" in chunk:
            token = f"<{len(tokens)}>"
            tokens.append(token)
            chunk = {**chunk, "delta": token}
        out.append(chunk)
    return out, tokens


def sequences(with_reset: bool) -> st.SearchStrategy[list[Any]]:
    return st.lists(st.one_of(*CHUNKS, *([RESET] if with_reset else [])), max_size=40)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sequences(with_reset=True), st.sampled_from([5, 6, 7, "7+reset-step"]), CLOSE_REASONS)
def test_guard_output_validates_for_its_target(chunks, client, reason) -> None:
    chunks, _ = _number_deltas(chunks)
    target, reset_step = (7, True) if client == "7+reset-step" else (client, False)
    out, guard = guard_all(chunks, target=target, reason=reason, reset_step=reset_step)
    body = to_sse(out)
    # target 5's output is accepted by 5, 6 and 7; reset-step only by a client that knows it
    assert_valid_for(body, *range(target, 8), reset_step=reset_step)
    if not reset_step:
        assert "reset-step" not in [c["type"] for c in out]
    assert [c["type"] for c in out].count("start") == 1
    assert out[-1]["type"] == "finish" and guard.finished


def test_guard_output_accepted_by_real_clients(real_clients) -> None:
    examples: list[tuple[int, bytes, list[str]]] = []

    @settings(
        max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
    )
    @given(sequences(with_reset=False), st.sampled_from([5, 6, 7]), CLOSE_REASONS)
    def collect(chunks, target, reason) -> None:
        chunks, _ = _number_deltas(chunks)
        guard_out: list[dict[str, Any]] = []
        from chunkbridge.translators.core.guard import StreamGuard

        guard = StreamGuard(target=target)
        fed_tokens = []
        for chunk in chunks:
            if not guard.finished and isinstance(chunk, dict) and "delta" in chunk:
                if chunk.get("type") == "text-delta" and isinstance(chunk.get("id"), str):
                    fed_tokens.append(chunk["delta"])
            guard_out += guard.feed(chunk)
        guard_out += guard.close(CloseRequest(reason))
        examples.append((target, to_sse(guard_out), fed_tokens))

    collect()
    assert len(examples) >= 50
    results = real_clients.check_many([body for _, body, _ in examples])
    for (target, body, tokens), per_major in zip(examples, results, strict=True):
        for major in range(target, 8):
            verdict = per_major[major]
            assert verdict.ok, (target, major, verdict.fatal, body.decode()[:3000])
            text = verdict.text()
            missing = [t for t in tokens if t not in text]
            assert not missing, (target, major, missing, body.decode()[:3000])
