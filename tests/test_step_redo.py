"""A model step made again after a takeover (:class:`StepRedo`): readers who saw part of the
step see each text once, and the whole stream is one the real ai 5, 6 and 7 clients accept.

The first instance runs an agent turn (step 1: some text and a gateway call with its result)
and dies while the model streams step 2; the instance that takes over feeds the whole chunk
log into a fresh turn (``Turn.emit``, as the takeover does) and streams the model's step 2
again, through :class:`StepRedo` and the turn's hot path (``Turn.encode_frame``). The model is
``anthropic-messages`` frames, scripted here block by block.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from chunkbridge.gateway.registry import get_dialect
from chunkbridge.kit import IdFactory, TranslatorOptions, counter_ids
from chunkbridge.translators.core.event_translator import EventTranslator
from chunkbridge.translators.core.redo import (
    CUT_OFF_CALL_TEXT,
    StepRedo,
    step_tail,
    withdrawable,
)
from chunkbridge.translators.core.turn import Turn, TurnOptions
from tests.agent_responses import answer
from tests.conformance.harness import RealClients
from tests.helpers import assert_valid_for, decode_sse, to_sse

Chunk = dict[str, Any]
DIALECT = "anthropic-messages"
#: The gateway's tools (their parts are dynamic); ``weather`` is the app's.
TOOLS = frozenset({"add", "lookup"})
STEP_1 = answer(DIALECT, "Let me add.", [("call_add", "add", {"a": 2, "b": 3})], n=1)


# -- the model: anthropic-messages frames, block by block ------------------------------------------


@dataclass
class Block:
    kind: str  # "text", "thinking" or "tool"
    pieces: list[str]
    call_id: str = ""
    name: str = ""


def text(*pieces: str) -> Block:
    return Block("text", list(pieces))


def thinking(*pieces: str) -> Block:
    return Block("thinking", list(pieces))


def call(call_id: str, name: str, *pieces: str) -> Block:
    return Block("tool", list(pieces), call_id, name)


#: A block's delta type and the key of its text.
DELTAS = {
    "text": ("text_delta", "text"),
    "thinking": ("thinking_delta", "thinking"),
    "tool": ("input_json_delta", "partial_json"),
}


def frames(*blocks: Block) -> list[str]:
    """One step of the model (the second: ``msg_2``), its blocks streamed piece by piece."""
    message: dict[str, Any] = {"id": "msg_2", "type": "message", "role": "assistant"}
    message |= {"model": "claude-sonnet-4-5", "content": [], "stop_reason": None}
    message["usage"] = {"input_tokens": 200, "output_tokens": 1}
    out: list[Any] = [{"type": "message_start", "message": message}]
    for index, block in enumerate(blocks):
        start: dict[str, Any] = {"type": block.kind, block.kind: ""}
        if block.kind == "tool":
            start = {"type": "tool_use", "id": block.call_id, "name": block.name, "input": {}}
        out.append({"type": "content_block_start", "index": index, "content_block": start})
        delta_type, key = DELTAS[block.kind]
        for piece in block.pieces:
            delta = {"type": delta_type, key: piece}
            out.append({"type": "content_block_delta", "index": index, "delta": delta})
        if block.kind == "thinking":
            signature = {"type": "signature_delta", "signature": "sig-2"}
            out.append({"type": "content_block_delta", "index": index, "delta": signature})
        out.append({"type": "content_block_stop", "index": index})
    stop = "tool_use" if any(block.kind == "tool" for block in blocks) else "end_turn"
    usage = {"output_tokens": 20}
    out.append({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": usage})
    out.append({"type": "message_stop"})
    return [json.dumps(frame) for frame in out]


# -- the two instances -----------------------------------------------------------------------------


def translator(ids: IdFactory | None = None) -> EventTranslator:
    description = get_dialect(DIALECT)
    options = TranslatorOptions(settings=description.settings(), id_factory=ids)
    return description.translator(options)


def options() -> TurnOptions:
    return TurnOptions(
        target=5, gateway_tools=TOOLS, app_tools=frozenset({"weather"}), assemble=True
    )


def results(turn: Turn) -> list[Chunk]:
    """The loop runs the step's calls: their results."""
    outputs = [
        {"type": "tool-output-available", "toolCallId": ready.call_id, "output": ready.input}
        for ready in turn.step_join.take_ready()  # type: ignore[union-attr]
        if ready.name in TOOLS
    ]
    return turn.emit(outputs)


def first_instance(step_2: list[str], cut: int) -> list[Chunk]:
    """What readers saw when the first instance died: step 1 with its result, then the first
    ``cut`` frames of step 2."""
    return run_first(step_2, cut)[0]


def run_first(step_2: list[str], cut: int) -> tuple[list[Chunk], Turn]:
    """The first instance's log and turn, up to frame ``cut`` of step 2 (the loop's model
    calls share one id counter)."""
    ids = counter_ids()
    turn = Turn(translator(ids), options())
    log = [chunk for frame in STEP_1 for chunk in turn.feed_frame(frame)]
    log += results(turn)
    log += turn.emit([{"type": "finish-step"}])
    turn.step_join.next_step(translator(ids))  # type: ignore[union-attr]
    log += [chunk for frame in step_2[:cut] for chunk in turn.feed_frame(frame)]
    return log, turn


@dataclass
class Takeover:
    log: list[Chunk]
    #: What the second instance wrote after the log.
    out: list[Chunk]
    turn: Turn
    #: The calls the loop got to run from the redone step.
    ready: list[tuple[str, Any]] = field(default_factory=list)
    #: The turn's ``translator.text_id`` after each redone frame (the hot path writes under it).
    text_ids: list[str | None] = field(default_factory=list)

    @property
    def body(self) -> bytes:
        return to_sse(self.log + self.out)

    @property
    def message(self) -> dict[str, Any]:
        assert self.turn.assembler is not None and self.turn.assembler.message is not None
        return self.turn.assembler.message

    def step_2(self) -> list[dict[str, Any]]:
        """The message's parts after step 1."""
        parts: list[dict[str, Any]] = self.message["parts"]
        starts = [i for i, part in enumerate(parts) if part["type"] == "step-start"]
        return parts[starts[1] + 1 :]


def take_over(
    log: list[Chunk],
    redo: list[str],
    shown: Sequence[Chunk] | None = None,
    repairs: dict[str, int] | None = None,
) -> Takeover:
    """The second instance: the log into a fresh turn, then step 2 again through ``StepRedo``
    (told ``shown``: the whole log unless given), its calls run, the turn ended (with the guard
    making only ``repairs``, none unless given)."""
    turn = Turn(StepRedo(translator(), log if shown is None else shown), options())
    assert turn.emit(log) == log  # the guard and the assembler now hold what readers saw
    written, text_ids = b"", []
    for frame in redo:
        written += turn.encode_frame(frame)  # the gateway's hot path
        text_ids.append(turn.translator.text_id)
    join = turn.step_join
    assert join is not None and join.ended is not None
    ready = [(r.call_id, r.input) for r in join.ready]
    out = decode_sse(written) + results(turn) + turn.close(join.ended)
    assert turn.guard.repairs == (repairs or {})  # a valid continuation: nothing repaired
    assert_valid_for(to_sse(log + out))
    return Takeover(log, out, turn, ready, text_ids)


def texts(parts: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(p["type"], p["text"]) for p in parts if p["type"] in ("text", "reasoning")]


def chunks_of(out: list[Chunk], *kinds: str) -> list[Chunk]:
    return [chunk for chunk in out if chunk["type"] in kinds]


# -- the same step again: every cut -------------------------------------------------------------


def step_2(name: str = "lookup") -> list[str]:
    """The first instance's step 2: reasoning, text, a call of ``name``."""
    return frames(
        thinking("The sum ", "is 5."),
        text("Five", " it is", ", let me look it up."),
        call("toolu_first", name, '{"q":', '"five"', "}"),
    )


STEP_2 = step_2()
#: The model's step 2 made again: the same answer in other pieces, the call another id.
REDO_2 = frames(
    thinking("The s", "um is 5."),
    text("Five it", " is, let me", " look it up."),
    call("toolu_redo", "lookup", '{"q":"fi', 've"}'),
)
TEXT_2 = "Five it is, let me look it up."


def uninterrupted(call_id: str) -> dict[str, Any]:
    """The message of an instance that never died, its call named ``call_id``."""
    _, turn = run_first(STEP_2, len(STEP_2))
    results(turn)
    assert turn.step_join is not None and turn.step_join.ended is not None
    turn.close(turn.step_join.ended)
    assert turn.assembler is not None
    message: dict[str, Any] = json.loads(
        json.dumps(turn.assembler.message).replace("toolu_first", call_id)
    )
    return message


@pytest.mark.parametrize("cut", range(len(STEP_2)))
def test_the_same_step_again_shows_every_text_once(cut: int) -> None:
    """Wherever the first instance died in step 2, the message ends as if it had not: the
    reasoning, the text and the call once each, the call under the id readers saw (once they
    saw it), which the loop runs."""
    log = first_instance(STEP_2, cut)
    takeover = take_over(log, REDO_2)
    call_id = (
        "toolu_first" if any(c.get("toolCallId") == "toolu_first" for c in log) else "toolu_redo"
    )
    assert takeover.message == uninterrupted(call_id)
    assert takeover.ready == [(call_id, {"q": "five"})]
    assert texts(takeover.step_2()) == [("reasoning", "The sum is 5."), ("text", TEXT_2)]
    assert len(chunks_of(takeover.out, "start-step")) == (0 if cut else 1)  # the step goes on


# -- a step that differs the second time ---------------------------------------------------------

#: Cuts of STEP_2: its text open at "Five it is"; its text ended; its call's input cut off at
#: '{"q":'; its call complete.
TEXT_OPEN, TEXT_ENDED, CALL_CUT, CALL_DONE = 9, 11, 13, 17
THINKING = thinking("The sum is 5.")


def test_a_longer_redo_goes_on_in_the_shown_part() -> None:
    """Readers saw "Five it is"; the model now says more: only what is new goes out, into the
    part readers saw, and its deltas take the slow path while the text repeats."""
    longer = TEXT_2 + " It may take a moment."
    takeover = take_over(first_instance(STEP_2, TEXT_OPEN), frames(THINKING, text(longer)))
    shown_id = "text-2"  # (step 1 had text-1: the first instance's model calls share a counter)
    assert chunks_of(takeover.out, "text-start", "text-delta", "text-end") == [
        {
            "type": "text-delta",
            "id": shown_id,
            "delta": ", let me look it up. It may take a moment.",
        },
        {"type": "text-end", "id": shown_id},
    ]
    assert texts(takeover.step_2()) == [("reasoning", "The sum is 5."), ("text", longer)]
    assert set(takeover.text_ids) == {None}  # the redone text-1 is shown as text-2: no hot path


def longer_after_an_ended_part() -> Takeover:
    log = first_instance(STEP_2, TEXT_ENDED)
    return take_over(log, frames(THINKING, text(TEXT_2 + " Then I add.")))


def test_a_longer_redo_of_an_ended_part_goes_on_in_a_part_of_its_own() -> None:
    """Readers saw the text end: the rest cannot join it, it comes as a part after it, under
    an id the message has not used (the fresh translator counts from text-1 again)."""
    takeover = longer_after_an_ended_part()
    assert chunks_of(takeover.out, "text-start", "text-delta", "text-end") == [
        {"type": "text-start", "id": "text-1-redo"},
        {"type": "text-delta", "id": "text-1-redo", "delta": " Then I add."},
        {"type": "text-end", "id": "text-1-redo"},
    ]
    assert texts(takeover.step_2()) == [
        ("reasoning", "The sum is 5."),
        ("text", TEXT_2),
        ("text", " Then I add."),
    ]


def diverging_text() -> Takeover:
    redo = frames(THINKING, text("Five it ", "was, I think."), call("toolu_2", "add", "{}"))
    return take_over(first_instance(STEP_2, TEXT_OPEN), redo)


def test_a_diverging_redo_leaves_what_was_shown_and_follows_with_the_new_answer() -> None:
    """The model answers otherwise: the shown text ends as readers saw it, the redone text so
    far comes as a new part, and the rest of the step passes through as the model made it."""
    takeover = diverging_text()
    assert chunks_of(takeover.out, "text-start", "text-delta", "text-end") == [
        {"type": "text-end", "id": "text-2"},
        {"type": "text-start", "id": "text-1-redo"},
        {"type": "text-delta", "id": "text-1-redo", "delta": "Five it was, I think."},
        {"type": "text-end", "id": "text-1-redo"},
    ]
    assert texts(takeover.step_2()) == [
        ("reasoning", "The sum is 5."),
        ("text", "Five it is"),
        ("text", "Five it was, I think."),
    ]
    assert takeover.ready == [("toolu_2", {})]
    assert takeover.turn.translator.inner.diverged  # type: ignore[attr-defined]


def another_tool() -> Takeover:
    redo = frames(THINKING, text(TEXT_2), call("toolu_2", "add", '{"a":5', ',"b":0}'))
    return take_over(first_instance(STEP_2, CALL_CUT), redo)


def test_a_call_of_another_tool_settles_the_cut_off_one() -> None:
    """Readers saw a lookup call's input begin; the model now calls add there: the lookup ends
    with tool-input-error (its input will never complete), the add call follows."""
    takeover = another_tool()
    tools = [p for p in takeover.step_2() if p["type"] == "dynamic-tool"]
    assert [(p["toolName"], p["toolCallId"], p["state"]) for p in tools] == [
        ("lookup", "toolu_first", "output-error"),
        ("add", "toolu_2", "output-available"),
    ]
    assert tools[0]["errorText"] == CUT_OFF_CALL_TEXT
    assert takeover.ready == [("toolu_2", {"a": 5, "b": 0})]


def same_call_other_input() -> Takeover:
    redo = frames(THINKING, text(TEXT_2), call("toolu_first", "lookup", '{"x":6}'))
    return take_over(first_instance(STEP_2, CALL_CUT), redo)


def test_the_same_call_with_another_input_is_a_call_of_its_own() -> None:
    """The call readers saw (same id) streams another input: the shown one is settled as cut
    off, the redone one is a new call whose id the message has not used."""
    takeover = same_call_other_input()
    tools = [p for p in takeover.step_2() if p["type"] == "dynamic-tool"]
    assert [(p["toolCallId"], p["state"], p.get("input")) for p in tools] == [
        ("toolu_first", "output-error", '{"q":'),
        ("toolu_first-redo", "output-available", {"x": 6}),
    ]
    assert takeover.ready == [("toolu_first-redo", {"x": 6})]


def complete_call_made_otherwise() -> Takeover:
    redo = frames(THINKING, text(TEXT_2), call("toolu_redo", "lookup", '{"q":', '"five"}', " "))
    repairs = {"settled-pending-tool": 1}
    return take_over(first_instance(STEP_2, CALL_DONE), redo, repairs=repairs)


def test_a_call_readers_saw_complete_and_the_redo_makes_otherwise_stays_as_shown() -> None:
    """Readers saw the lookup call whole; the redone input goes past it (an input cannot grow):
    the shown call stays as it was shown, not run, and the redone one follows as a call of its
    own, which runs. The guard settles the shown one at the turn's end, as any call left over."""
    takeover = complete_call_made_otherwise()
    start = {"type": "tool-input-start", "toolCallId": "toolu_redo", "toolName": "lookup"}
    delta = {"type": "tool-input-delta", "toolCallId": "toolu_redo"}
    assert chunks_of(takeover.out, "tool-input-start", "tool-input-delta") == [
        start | {"dynamic": True},
        delta | {"inputTextDelta": '{"q":"five"} '},
    ]
    assert takeover.ready == [("toolu_redo", {"q": "five"})]
    tools = [p for p in takeover.step_2() if p["type"] == "dynamic-tool"]
    assert [(p["toolCallId"], p["state"]) for p in tools] == [
        ("toolu_first", "output-error"),
        ("toolu_redo", "output-available"),
    ]


def call_not_made_again(name: str) -> Takeover:
    log = first_instance(step_2(name), CALL_CUT)
    return take_over(log, frames(THINKING, text(TEXT_2)))


@pytest.mark.parametrize("name", ["lookup", "weather"])
def test_a_cut_off_call_the_redo_does_not_make_is_settled_at_the_steps_end(name: str) -> None:
    """The redone step ends without the call readers saw begin (a gateway tool's, dynamic; an
    app tool's, static): its part is settled before the step ends, as a call whose input never
    completed; nothing runs."""
    takeover = call_not_made_again(name)
    settle: Chunk = {"type": "tool-input-error", "toolCallId": "toolu_first", "toolName": name}
    settle |= {"input": '{"q":', "errorText": CUT_OFF_CALL_TEXT}
    if name == "lookup":
        settle["dynamic"] = True
    assert chunks_of(takeover.out, "tool-input-error", "finish-step")[:2] == [
        settle,
        {"type": "finish-step"},
    ]
    assert takeover.ready == []
    part = takeover.step_2()[-1]
    assert (part["toolCallId"], part["state"]) == ("toolu_first", "output-error")


def failed_redo(how: str) -> Takeover:
    """Readers saw the text and the call's input begin; the redone call fails (an error event,
    or its connection drops) while its text still repeats the shown one."""
    log = first_instance(STEP_2, CALL_CUT)
    turn = Turn(StepRedo(translator(), log), options())
    turn.emit(log)
    out = [chunk for frame in REDO_2[:8] for chunk in turn.feed_frame(frame)]  # up to "Five it"
    if how == "error":
        error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
        out += turn.feed_frame(json.dumps(error))
    else:
        out += turn.upstream_ended()
    assert turn.done
    return Takeover(log, out, turn)


@pytest.mark.parametrize(
    ("how", "settle"),
    [
        ("error", {"type": "tool-output-error", "errorText": "interrupted"}),
        ("dropped", {"type": "tool-input-error", "errorText": CUT_OFF_CALL_TEXT}),
    ],
)
def test_a_redo_that_fails_ends_the_turn_with_each_text_once(
    how: str, settle: dict[str, Any]
) -> None:
    """The turn ends as any failing one: what readers saw stays, once; the cut-off call is
    settled (by the guard on an error, by the redo when its stream ends), then the error."""
    takeover = failed_redo(how)
    assert [c["type"] for c in takeover.out[-3:]] == ["error", "finish-step", "finish"]
    [settled] = [c for c in takeover.out if c.get("toolCallId") == "toolu_first"]
    assert settled.items() >= settle.items()
    assert texts(takeover.step_2()) == [("reasoning", "The sum is 5."), ("text", TEXT_2)]
    assert_valid_for(takeover.body)


def test_a_tail_of_only_its_start_step() -> None:
    """Readers saw the step open, nothing of it yet: the redone start-step is dropped, the rest
    is the model's step as it comes."""
    takeover = take_over(first_instance(STEP_2, 1), REDO_2)
    assert chunks_of(takeover.out, "start-step") == []
    assert [p["type"] for p in takeover.message["parts"]].count("step-start") == 2
    assert texts(takeover.step_2()) == [("reasoning", "The sum is 5."), ("text", TEXT_2)]
    assert takeover.ready == [("toolu_redo", {"q": "five"})]


def test_an_empty_tail_passes_the_step_through_on_the_hot_path() -> None:
    """Told a tail with nothing in it, the wrapper changes nothing: the same bytes as the bare
    translator, its text deltas on the hot path."""
    log = first_instance(STEP_2, 0)
    assert step_tail(log) == []
    bare = Turn(translator(), options())
    bare.emit(log)
    expected = b"".join(bare.encode_frame(frame) for frame in REDO_2)
    takeover = take_over(log, REDO_2, shown=step_tail(log))
    assert to_sse(takeover.out).startswith(expected)
    assert "text-1" in takeover.text_ids


def test_step_tail_is_the_chunks_after_the_last_finish_step() -> None:
    log = first_instance(STEP_2, TEXT_OPEN)
    tail = step_tail(log)
    assert tail[0] == {"type": "start-step"} and log[-len(tail) - 1] == {"type": "finish-step"}
    assert step_tail(tail) == tail


def test_a_reset_step_leaves_the_step_open_and_nothing_shown_to_match() -> None:
    """After ``reset-step`` readers hold the step's opening and nothing of it: the tail is that
    opening and what came after; a redone step then opens no second step and matches nothing
    (each part new), and there is nothing left to withdraw."""
    log = first_instance(STEP_2, TEXT_OPEN)
    assert withdrawable(log)
    reset = [*log, {"type": "reset-step"}]
    assert step_tail(reset) == [{"type": "start-step"}] and not withdrawable(reset)
    text = {"type": "text-start", "id": "text-9"}
    assert step_tail([*reset, text]) == [{"type": "start-step"}, text]
    assert withdrawable([*reset, text])
    assert not withdrawable([*log, {"type": "finish-step"}, {"type": "start-step"}])


# -- the real clients ---------------------------------------------------------------------------


@pytest.mark.slow
def test_the_real_clients_take_every_takeover_and_show_each_text_once(
    real_clients: RealClients,
) -> None:
    """The whole stream — the log up to the takeover, then what the second instance wrote —
    through ai 5, 6 and 7: accepted, and the message they build is the turn's, with no text
    twice."""
    takeovers = [take_over(first_instance(STEP_2, cut), REDO_2) for cut in range(len(STEP_2))]
    takeovers += [
        longer_after_an_ended_part(),
        diverging_text(),
        another_tool(),
        same_call_other_input(),
        complete_call_made_otherwise(),
        call_not_made_again("lookup"),
        call_not_made_again("weather"),
        failed_redo("error"),
        failed_redo("dropped"),
    ]
    verdicts = real_clients.check_many([takeover.body for takeover in takeovers])
    for takeover, by_major in zip(takeovers, verdicts, strict=True):
        expected = texts(takeover.message["parts"])
        assert ("text", "Let me add.") in expected
        for major, verdict in by_major.items():
            assert verdict.ok, (major, verdict.fatal)
            assert verdict.message is not None
            assert texts(verdict.message["parts"]) == expected, major
            shown = [text for kind, text in expected if kind == "text"]
            assert not any(a in b for i, a in enumerate(shown) for b in shown[i + 1 :] if a)
            calls = [p["toolCallId"] for p in verdict.message["parts"] if "toolCallId" in p]
            assert len(calls) == len(set(calls)), major
