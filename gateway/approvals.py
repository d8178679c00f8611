"""The approvals this gateway issued, so that it accepts answers only to those.

An approval answer comes back in the client's next request as untrusted JSON
(``protocol_specs/human_in_the_loop.py``). It counts only when this gateway issued that approval
id in that session for that tool call and it is still unanswered (the first answer wins; a
replayed request gets 409); with ``approval_secret`` its signature must verify as well, which
also binds the tool's input. Everything is checked before the upstream hears of the answer.

The ledger lives in the process (``MemoryApprovalLedger``) or, with ``resume = redis``, in Redis
(``RedisApprovalLedger``: a hash per session), so that any instance can take the answer.
Entries expire after ``approval_ttl``.
"""

from __future__ import annotations

import asyncio
import hmac
import time
from collections.abc import Sequence
from typing import Any, Protocol

from gateway.errors import BadRequest, RequestError
from protocol_specs.human_in_the_loop import approval_signature
from translators.core.guard import IssuedApproval
from translators.kit import ApprovalAnswer

__all__ = [
    "ApprovalAlreadyAnswered",
    "ApprovalLedger",
    "MemoryApprovalLedger",
    "RedisApprovalLedger",
    "claim_answers",
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


class ApprovalAlreadyAnswered(RequestError):
    status_hint = 409
    client_message = "This approval was already answered."


class ApprovalLedger(Protocol):
    def issue(self, session_id: str, approval: IssuedApproval) -> None: ...

    async def lookup(self, session_id: str, approval_ids: Sequence[str]) -> list[Any]: ...

    async def claim(self, session_id: str, answers: Sequence[ApprovalAnswer]) -> bool: ...

    async def release(self, session_id: str, answers: Sequence[ApprovalAnswer]) -> None: ...


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

    async def claim(self, session_id: str, answers: Sequence[ApprovalAnswer]) -> bool:
        """Mark every answer's approval answered, or none when one already is (atomic: no
        await inside)."""
        entries = self._sessions.get(session_id, {})
        if any(entries.get(a.approval_id, (0, _ANSWERED))[1] == _ANSWERED for a in answers):
            return False
        for a in answers:
            entries[a.approval_id] = (entries[a.approval_id][0], _ANSWERED)
        return True

    async def release(self, session_id: str, answers: Sequence[ApprovalAnswer]) -> None:
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

    async def claim(self, session_id: str, answers: Sequence[ApprovalAnswer]) -> bool:
        ids = [a.approval_id for a in answers]
        return bool(await self._claim(keys=[self._key(session_id)], args=ids))

    async def release(self, session_id: str, answers: Sequence[ApprovalAnswer]) -> None:
        mapping = {a.approval_id: a.tool_call_id for a in answers}
        await self.redis.hset(self._key(session_id), mapping=mapping)


async def claim_answers(
    ledger: ApprovalLedger,
    session_id: str,
    answers: Sequence[ApprovalAnswer],
    secret: str | None,
) -> None:
    """Verify the answers (:func:`_verify`) and claim them: the first request with an
    answer wins, a concurrent or later one gets 409. Undo with ``ledger.release`` when the
    upstream never heard of them."""
    if not answers:
        return
    await _verify(ledger, session_id, answers, secret)
    if not await ledger.claim(session_id, answers):
        raise ApprovalAlreadyAnswered(detail="answered concurrently")


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
