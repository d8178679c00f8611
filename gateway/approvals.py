"""The approvals and questions this gateway issued, so that it accepts answers only to those.

An approval answer comes back in the client's next request as untrusted JSON
(``protocol_specs/human_in_the_loop.py``). It counts only when this gateway issued that approval
id in that session for that tool call and it is still unanswered (the first answer wins; a
replayed request gets 409); with ``approval_secret`` its signature must verify as well, which
also binds the tool's input. Everything is checked before the upstream hears of the answer.

A question's answer goes through the same ledger (under ``question:<id>``): the questions a turn
leaves open are issued when the turn ends waiting for them, and an answer counts once (409 for a
replay: the agent hears exactly one answer); a question whose turn was stopped, timed out or
failed was never issued, and answering it is a 400 rather than a request that would hang until
the first-event timeout.

The ledger lives in the process (``MemoryApprovalLedger``) or, with ``resume = redis``, in Redis
(``RedisApprovalLedger``: a hash per session), so that any instance can take the answer.
Entries expire after ``approval_ttl``.
"""

from __future__ import annotations

import asyncio
import hmac
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from chunkbridge.gateway.errors import BadRequest, RequestError
from chunkbridge.kit import ApprovalAnswer
from chunkbridge.protocol_specs.human_in_the_loop import QUESTION_TOOL, approval_signature
from chunkbridge.translators.core.guard import IssuedApproval

__all__ = [
    "ApprovalAlreadyAnswered",
    "ApprovalLedger",
    "MemoryApprovalLedger",
    "QuestionAlreadyAnswered",
    "QuestionAnswer",
    "RedisApprovalLedger",
    "claim_answers",
    "issued_question",
]

#: What an answered approval's entry becomes (kept until it expires, to tell a replay from a
#: forgery).
_ANSWERED = "answered"


#: All of ARGV pending in hash KEYS[1] → all marked answered (1); otherwise nothing changes (0).
_CLAIM = """
for _, id in ipairs(ARGV) do
  local v = redis.call('HGET', KEYS[1], id)
  if (not v) or v == 'answered' then return 0 end
end
for _, id in ipairs(ARGV) do redis.call('HSET', KEYS[1], id, 'answered') end
return 1
"""


#: Ledger keys of questions (approval ids are the upstream's own: no clash with this prefix).
_QUESTION_KEY = "question:"


class ApprovalAlreadyAnswered(RequestError):
    status_hint = 409
    client_message = "This approval was already answered."


class QuestionAlreadyAnswered(RequestError):
    status_hint = 409
    client_message = "This question was already answered."


class Claim(Protocol):
    """An answer as the ledger sees it: its entry and the tool call it is for."""

    @property
    def approval_id(self) -> str: ...

    @property
    def tool_call_id(self) -> str: ...


@dataclass(frozen=True, slots=True)
class QuestionAnswer:
    """The app's answer to one of the agent's questions (an ``ask_user`` call it answered)."""

    tool_call_id: str

    @property
    def approval_id(self) -> str:
        return _QUESTION_KEY + self.tool_call_id


def issued_question(question_id: str) -> IssuedApproval:
    """A question the app may answer once (the ledger entry of :class:`QuestionAnswer`)."""
    return IssuedApproval(_QUESTION_KEY + question_id, question_id, QUESTION_TOOL)


class ApprovalLedger(Protocol):
    def issue(self, session_id: str, approval: IssuedApproval) -> None: ...

    async def lookup(self, session_id: str, approval_ids: Sequence[str]) -> list[Any]: ...

    async def claim(self, session_id: str, answers: Sequence[Claim]) -> bool: ...

    async def release(self, session_id: str, answers: Sequence[Claim]) -> None: ...


class MemoryApprovalLedger:
    """One process's ledger: session → approval id → (expiry, tool call id or answered)."""

    #: Above this many sessions, issuing sweeps expired entries out of every session.
    SWEEP_ABOVE = 10_000

    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self._sessions: dict[str, dict[str, tuple[float, str]]] = {}

    def issue(self, session_id: str, approval: IssuedApproval) -> None:
        if len(self._sessions) > self.SWEEP_ABOVE:
            self._sweep()
        entries = self._sessions.setdefault(session_id, {})
        entries[approval.approval_id] = (time.monotonic() + self.ttl, approval.tool_call_id)

    async def lookup(self, session_id: str, approval_ids: Sequence[str]) -> list[str | None]:
        """Per id: the tool call id it was issued for, ``"answered"``, or ``None``."""
        now = time.monotonic()
        entries = self._sessions.get(session_id, {})
        out: list[str | None] = []
        for approval_id in approval_ids:
            entry = entries.get(approval_id)
            out.append(entry[1] if entry is not None and entry[0] > now else None)
        return out

    async def claim(self, session_id: str, answers: Sequence[Claim]) -> bool:
        """Mark every answer's approval answered, or none when one already is (atomic: no
        await inside)."""
        entries = self._sessions.get(session_id, {})
        if any(entries.get(a.approval_id, (0, _ANSWERED))[1] == _ANSWERED for a in answers):
            return False
        for a in answers:
            entries[a.approval_id] = (entries[a.approval_id][0], _ANSWERED)
        return True

    async def release(self, session_id: str, answers: Sequence[Claim]) -> None:
        """Undo a claim (the upstream never got the answers)."""
        entries = self._sessions.get(session_id, {})
        for a in answers:
            if a.approval_id in entries:
                entries[a.approval_id] = (entries[a.approval_id][0], a.tool_call_id)

    def _sweep(self) -> None:
        now = time.monotonic()
        for session_id in list(self._sessions):
            live = {k: v for k, v in self._sessions[session_id].items() if v[0] > now}
            if live:
                self._sessions[session_id] = live
            else:
                del self._sessions[session_id]


class RedisApprovalLedger:
    """The ledger shared by every instance: hash ``chunkbridge:approvals:<session>``."""

    def __init__(self, redis: Any, ttl: float, log: Any) -> None:
        self.redis = redis
        self.ttl_ms = int(ttl * 1000)
        self.log = log
        #: Writes under way (strong references: a task nobody holds may be collected).
        self._writes: set[asyncio.Task[None]] = set()
        self._claim = redis.register_script(_CLAIM)

    @staticmethod
    def _key(session_id: str) -> str:
        return f"chunkbridge:approvals:{session_id}"

    def issue(self, session_id: str, approval: IssuedApproval) -> None:
        # Called from inside a turn (synchronously): the write runs as its own task, done long
        # before a person can answer.
        task = asyncio.get_running_loop().create_task(self._issue(session_id, approval))
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    async def _issue(self, session_id: str, approval: IssuedApproval) -> None:
        key = self._key(session_id)
        try:
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.hset(key, approval.approval_id, approval.tool_call_id)
                pipe.pexpire(key, self.ttl_ms)
                await pipe.execute()
        except Exception as exc:  # the turn goes on; the answer will be refused (400)
            self.log.error("approval.issue_failed", session_id=session_id, error=repr(exc))

    async def lookup(self, session_id: str, approval_ids: Sequence[str]) -> list[str | None]:
        if self._writes:  # this instance's own writes first
            await asyncio.gather(*self._writes, return_exceptions=True)
        values = await self.redis.hmget(self._key(session_id), list(approval_ids))
        return [v.decode() if isinstance(v, bytes) else v for v in values]

    async def claim(self, session_id: str, answers: Sequence[Claim]) -> bool:
        ids = [a.approval_id for a in answers]
        return bool(await self._claim(keys=[self._key(session_id)], args=ids))

    async def release(self, session_id: str, answers: Sequence[Claim]) -> None:
        mapping = {a.approval_id: a.tool_call_id for a in answers}
        await self.redis.hset(self._key(session_id), mapping=mapping)


async def claim_answers(
    ledger: ApprovalLedger,
    session_id: str,
    approvals: Sequence[ApprovalAnswer],
    questions: Sequence[QuestionAnswer],
    secret: str | None,
) -> None:
    """Verify the answers (:func:`_verify`, :func:`_verify_questions`) and claim them all at
    once: the first request with an answer wins, a concurrent or later one gets 409. Undo with
    ``ledger.release`` when the upstream never heard of them."""
    if not approvals and not questions:
        return
    await _verify(ledger, session_id, approvals, secret)
    await _verify_questions(ledger, session_id, questions)
    if not await ledger.claim(session_id, [*approvals, *questions]):
        if approvals:
            raise ApprovalAlreadyAnswered(detail="answered concurrently")
        raise QuestionAlreadyAnswered(detail="answered concurrently")


async def _verify_questions(
    ledger: ApprovalLedger, session_id: str, questions: Sequence[QuestionAnswer]
) -> None:
    """Raise unless every answer is to a question this gateway's stream left waiting in this
    session and not yet answered."""
    if not questions:
        return
    issued = await ledger.lookup(session_id, [q.approval_id for q in questions])
    for question, call_id in zip(questions, issued, strict=True):
        if call_id == _ANSWERED:
            raise QuestionAlreadyAnswered(detail=f"question {question.tool_call_id}")
        if call_id != question.tool_call_id:
            raise BadRequest(
                f"Question {question.tool_call_id!r} is not waiting for an answer in this "
                "session (its turn was stopped or failed, or it expired)."
            )


async def _verify(
    ledger: ApprovalLedger,
    session_id: str,
    answers: Sequence[ApprovalAnswer],
    secret: str | None,
) -> None:
    """Raise unless every answer is to an approval this gateway issued in this session for that
    tool call, still unanswered, and (with a secret) signed by it."""
    issued = await ledger.lookup(session_id, [a.approval_id for a in answers])
    for answer, call_id in zip(answers, issued, strict=True):
        if call_id == _ANSWERED:
            raise ApprovalAlreadyAnswered(detail=f"approval {answer.approval_id}")
        if call_id is None:
            raise BadRequest(
                f"Approval {answer.approval_id!r} was not requested in this session "
                "(or it expired)."
            )
        if call_id != answer.tool_call_id:
            raise BadRequest(
                f"Approval {answer.approval_id!r} was requested for another tool call."
            )
        if secret is not None:
            expected = approval_signature(
                secret, answer.approval_id, answer.tool_call_id, answer.tool_name, answer.input
            )
            if answer.signature is None or not hmac.compare_digest(expected, answer.signature):
                raise BadRequest(
                    f"Approval {answer.approval_id!r}: the signature does not verify "
                    "(the tool call or its input changed)."
                )
