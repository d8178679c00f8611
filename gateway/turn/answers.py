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

The ledger (:class:`~chunkbridge.gateway.stores.ApprovalLedger`) lives in the process or, with
``resume = redis``, in Redis, so that any instance can take the answer. Entries expire after
``approval_ttl``.
"""

from __future__ import annotations

import hmac
from collections.abc import Sequence
from dataclasses import dataclass

from chunkbridge.gateway.errors import BadRequest, RequestError
from chunkbridge.gateway.metrics import Metrics
from chunkbridge.gateway.stores.base import ANSWERED, ApprovalLedger
from chunkbridge.kit import ApprovalAnswer
from chunkbridge.protocol_specs.human_in_the_loop import QUESTION_TOOL, approval_signature
from chunkbridge.translators.core.approvals import IssuedApproval

__all__ = [
    "ApprovalAlreadyAnswered",
    "QuestionAlreadyAnswered",
    "QuestionAnswer",
    "claim_answers",
    "issue_approval",
    "issued_question",
]

#: Ledger keys of questions (approval ids are the upstream's own: no clash with this prefix).
_QUESTION_KEY = "question:"


class ApprovalAlreadyAnswered(RequestError):
    status_hint = 409
    client_message = "This approval was already answered."


class QuestionAlreadyAnswered(RequestError):
    status_hint = 409
    client_message = "This question was already answered."


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


def issue_approval(
    ledger: ApprovalLedger, metrics: Metrics, session_id: str, approval: IssuedApproval
) -> None:
    """An approval the stream requests: into the ledger (answers are accepted only for it)."""
    ledger.issue(session_id, approval)
    metrics.approvals.labels("requested").inc()


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
        if call_id == ANSWERED:
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
        if call_id == ANSWERED:
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
