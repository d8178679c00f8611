"""The per-turn pipeline on its own: every ending goes through one typed path, nothing raises."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from chunkbridge.kit import Item, Translator, require_str
from chunkbridge.translators.core.closing import CLOSE_OUTCOMES, CloseReason, CloseRequest
from chunkbridge.translators.core.sse_codec import encode_chunks
from chunkbridge.translators.core.turn import Turn, TurnOptions
from tests.helpers import assert_valid_for, to_sse, types


class Tokens(Translator):
    """A minimal dialect: ``tok`` streams text, ``end`` completes, ``boom`` is a bug of ours."""

    HANDLERS = {"tok": "_on_tok", "end": "_on_end", "boom": "_on_boom"}
    TERMINAL_FRAMES = frozenset({"[END]"})

    def _on_tok(self, event: dict[str, Any]) -> Sequence[Item]:
        return self.text_delta(require_str(event, "text"))

    def _on_end(self, event: dict[str, Any]) -> Sequence[Item]:
        return [*self.end_parts(), CloseRequest(CloseReason.COMPLETED, finish_reason="length")]

    def _on_boom(self, event: dict[str, Any]) -> Sequence[Item]:
        raise KeyError("a bug in a handler")

    def fast_text_delta(self, event: dict[str, Any]) -> str | None:
        text = event.get("text")
        return text if event.get("type") == "tok" and type(text) is str and text else None


def turn(target: int = 5) -> Turn:
    return Turn(Tokens(), TurnOptions(target=target))


def test_a_dialect_close_request_ends_the_turn_with_its_finish_reason() -> None:
    t = turn()
    out = t.feed({"type": "tok", "text": "hi"}) + t.feed({"type": "end"})
    assert types(out) == ["start", "start-step", "text-start", "text-delta", "text-end"] + [
        "finish-step",
        "finish",
    ]
    assert t.done and t.close_reason is CloseReason.COMPLETED and t.finish_reason == "length"
    assert t.close(CloseRequest(CloseReason.TIMEOUT)) == [] and t.upstream_ended() == []
    assert t.feed({"type": "tok", "text": "late"}) == [] and t.after_done == 1


@pytest.mark.parametrize(
    ("reason", "finish_reason", "has_error"),
    [
        (CloseReason.TIMEOUT, "error", True),
        (CloseReason.SHUTDOWN, "error", True),
        (CloseReason.ABORTED, "interrupted", False),
    ],
)
def test_the_driver_ends_a_turn_mid_text_validly(
    reason: CloseReason, finish_reason: str, has_error: bool
) -> None:
    t = turn(target=7)
    out = t.feed({"type": "tok", "text": "partial"}) + t.close(CloseRequest(reason))
    assert out[-1] == {"type": "finish", "finishReason": finish_reason}
    assert ("error" in types(out)) is has_error and "text-end" in types(out)
    assert t.close_reason is reason and t.finish_reason == finish_reason
    assert_valid_for(to_sse(out), 7)


def test_an_upstream_that_goes_away_truncates_the_turn_with_its_reason() -> None:
    t = turn()
    out = t.feed({"type": "tok", "text": "a"}) + t.upstream_ended("connection reset")
    assert {"type": "error", "errorText": "connection reset"} in out
    assert t.close_reason is CloseReason.UPSTREAM_CLOSED and t.finish_reason == "error"
    assert_valid_for(to_sse(out))


def test_a_terminal_frame_completes_the_turn() -> None:
    t = turn()
    body = t.encode_frame(b'{"type":"tok","text":"a"}') + t.encode_frame(b"[END]")
    assert t.close_reason is CloseReason.COMPLETED and t.finish_reason == "stop"
    assert_valid_for(body + b"data: [DONE]\n\n")


def test_the_hot_path_and_the_general_path_write_the_same_bytes() -> None:
    frames = [b'{"type":"tok","text":"a"}', b'{"type":"tok","text":"b\\u00e9"}', b'{"type":"end"}']
    fast, slow = turn(), turn()
    assert b"".join(fast.encode_frame(f) for f in frames) == b"".join(
        encode_chunks(slow.feed_frame(f)) for f in frames
    )


def test_a_bug_in_a_handler_is_an_internal_error_not_the_upstreams_fault() -> None:
    t = turn()
    body = t.encode_frame(b'{"type":"tok","text":"a"}') + t.encode_frame(b'{"type":"boom"}')
    assert isinstance(t.internal_error, KeyError)
    assert t.close_reason is CloseReason.INTERNAL_ERROR and t.finish_reason == "error"
    assert t.encode_frame(b'{"type":"tok","text":"late"}') == b""
    assert_valid_for(body + b"data: [DONE]\n\n")


def _turn_whose_guard_fails(monkeypatch: pytest.MonkeyPatch) -> tuple[Turn, list[Any]]:
    """A turn that streamed "a", then met a bug in the guard itself on the next event."""
    t = turn()
    out = t.feed({"type": "tok", "text": "a"})

    def broken(*args: Any) -> list[Any]:
        raise RuntimeError("a bug in the guard")

    monkeypatch.setattr(t.guard, "feed", broken)
    monkeypatch.setattr(t.guard, "close", broken)
    return t, out + t.feed({"type": "tok", "text": "b"})


def test_when_the_guard_itself_fails_the_turn_still_ends_with_error_and_finish(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    t, out = _turn_whose_guard_fails(monkeypatch)
    assert out[-2:] == [
        {"type": "error", "errorText": CLOSE_OUTCOMES[CloseReason.INTERNAL_ERROR].error_text},
        {"type": "finish", "finishReason": "error"},
    ]
    assert isinstance(t.internal_error, RuntimeError) and t.done
    assert t.close_reason is CloseReason.INTERNAL_ERROR
    assert t.close(CloseRequest(CloseReason.TIMEOUT)) == []
    # The client stops at the error chunk: the text part left open is no fault.
    assert_valid_for(to_sse(out))


def test_the_real_clients_accept_every_ending_of_a_turn(
    real_clients: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    cases: dict[str, tuple[bytes, str, bool]] = {}  # name → (body, finishReason, error chunk)
    for reason, finish_reason, has_error in [
        (CloseReason.TIMEOUT, "error", True),
        (CloseReason.SHUTDOWN, "error", True),
        (CloseReason.ABORTED, "other", False),  # "interrupted" gated for a 5 target
        (CloseReason.INTERNAL_ERROR, "error", True),
    ]:
        t = turn()
        out = t.feed({"type": "tok", "text": "a"}) + t.close(CloseRequest(reason))
        cases[reason.value] = (to_sse(out), finish_reason, has_error)
    t = turn()
    cases["handler bug"] = (
        t.encode_frame(b'{"type":"tok","text":"a"}')
        + t.encode_frame(b'{"type":"boom"}')
        + b"data: [DONE]\n\n",
        "error",
        True,
    )
    cases["guard bug"] = (to_sse(_turn_whose_guard_fails(monkeypatch)[1]), "error", True)
    names = list(cases)
    verdicts = real_clients.check_many([cases[name][0] for name in names])
    for name, by_major in zip(names, verdicts, strict=True):
        _, finish_reason, has_error = cases[name]
        for major, verdict in by_major.items():
            assert verdict.ok, (name, major, verdict.fatal)
            assert verdict.text() == "a", (name, major)
            assert (verdict.error_text is not None) is has_error, (name, major)
            if not has_error:  # the client stops reading at an error chunk
                assert verdict.finish_reason == finish_reason, (name, major)
