"""What a durable loop turn records of itself, so that another instance can go on with it.

A checkpoint is data — JSON in the store — never inferred from the bytes sent. Its *head*, the
same for the whole turn, is written once, with the first: the request the turn sends (to build
its next model request again) and the assistant message it continues. Each checkpoint then says
where the loop is (:class:`Stage`, and the loop's own state: steps, usage, reports), how many
bytes of the chunk log it stands for, and, while tools run, the calls of the step (each with
whether it may run again). The message assembled so far is not stored again at every step: it
is what the chunk log holds up to that many bytes, which a takeover reads back (the same
chunks build the same message). What readers saw past them — the *tail* — tells the taker the
rest: results that came in, or a model step that was streaming.

Checkpoints are written at the loop's boundaries, each before what it guards is done:

* ``calling`` — before a model call (the turn's first, and after each step's results): a
  takeover calls the model again with the message so far; a step that was streaming is done
  again;
* ``results`` — when the model's step ended, before its calls are sent: the step's ending (its
  finishReason and metadata) and its calls are recorded, so the model is never asked for that
  step again; a call without a result in the tail runs again only where its replay policy says
  it may (else its result is an error saying it was interrupted);
* ``released`` — before a continuation's approved or answered calls run: a takeover runs none of
  them again (an approved call runs at most once; an answered one waited in the dead process).

How often a turn was taken over is counted by the store, where the takeover claims it (a taker
that dies at once is counted too), not here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

import orjson

from chunkbridge.translators.core.steps import ReadyCall

__all__ = ["Checkpoint", "Intent", "Stage"]


class Stage(StrEnum):
    """Which boundary of the loop a checkpoint was written at (see the module)."""

    CALLING = "calling"
    RESULTS = "results"
    RELEASED = "released"


@dataclass(frozen=True, slots=True)
class Intent:
    """A call about to be sent: what it is and whether it may be sent again."""

    call_id: str
    name: str
    input: Any
    #: May run again after a takeover (its tool's replay policy).
    replay: bool
    #: Its idempotency key: the same on every run of the call.
    key: str

    def ready(self) -> ReadyCall:
        return ReadyCall(self.call_id, self.name, self.input)

    def to_dict(self) -> dict[str, Any]:
        """As JSON (its input as it is: ``asdict`` would copy it deeply first)."""
        return {
            "call_id": self.call_id,
            "name": self.name,
            "input": self.input,
            "replay": self.replay,
            "key": self.key,
        }


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One durable turn's state at a boundary of its loop (see the module)."""

    #: Written in order: 1 for the turn's first.
    seq: int
    stage: Stage
    run_id: str
    message_id: str
    #: The AI SDK major the stream is written for.
    target: int
    #: Bytes of the chunk log this checkpoint stands for; of them, the first ``prefix`` are
    #: not the turn's own chunks (the trace comment, the resume prefix: a continuation's
    #: message replayed for fresh readers).
    log_bytes: int
    prefix: int
    #: :meth:`AgentLoop.state <chunkbridge.translators.core.agent_loop.AgentLoop.state>`
    #: (empty: the loop has not begun).
    loop: dict[str, Any]
    #: ``results``: the model step's ending (``finish_reason``, ``metadata``).
    ended: dict[str, Any] | None = None
    #: ``results`` / ``released``: the calls being sent — or, with ``sent`` false, about to
    #: be: their instance stopped on purpose before it sent them (they all run after it).
    intents: tuple[Intent, ...] = ()
    sent: bool = True
    #: With ``target``, whom the stream is written for: the client accepts ``reset-step``
    #: (``TurnOptions.reset_step``). Absent from checkpoints written before it: ``False``.
    reset_step: bool = False
    #: The head: the request as the turn sends it (``ChatRequest`` JSON), and the assistant
    #: message it continues (``None``: a new one).
    request: dict[str, Any] = field(default_factory=dict)
    continued: dict[str, Any] | None = None
    #: (head) The calls whose approval the continuation denied (their ``tool-output-denied``
    #: comes first in the stream, even from a taker that begins it).
    denied: tuple[str, ...] = ()

    def next(self, stage: Stage, **changes: Any) -> Checkpoint:
        """The turn's next checkpoint."""
        return replace(self, seq=self.seq + 1, stage=stage, **changes)

    def to_json(self) -> bytes:
        """The checkpoint without its head."""
        return _dumps(
            {
                "seq": self.seq,
                "stage": self.stage.value,
                "run_id": self.run_id,
                "message_id": self.message_id,
                "target": self.target,
                "reset_step": self.reset_step,
                "log_bytes": self.log_bytes,
                "prefix": self.prefix,
                "loop": self.loop,
                "ended": self.ended,
                "intents": [intent.to_dict() for intent in self.intents],
                "sent": self.sent,
            }
        )

    def head_json(self) -> bytes:
        return _dumps({"request": self.request, "continued": self.continued, "denied": self.denied})

    @classmethod
    def from_json(cls, body: bytes | str, head: bytes | str) -> Checkpoint:
        data = orjson.loads(body)
        data["stage"] = Stage(data["stage"])
        data["intents"] = tuple(Intent(**intent) for intent in data["intents"])
        head_data = orjson.loads(head)
        head_data["denied"] = tuple(head_data.get("denied", ()))
        return cls(**data, **head_data)


def _dumps(data: Any) -> bytes:
    try:
        return orjson.dumps(data)
    except orjson.JSONEncodeError:  # an integer past 64 bits in a call's input (valid JSON)
        return json.dumps(data, separators=(",", ":")).encode()
