"""Tool approvals in the stream (``protocol_specs/human_in_the_loop.py``): each request the
stream guard lets through is signed when a signer is given, reported to whoever keeps the
ledger (the gateway accepts answers only to approvals it issued), and, for ai 5, which has no
approvals, turned into its question form: a client-side ``ask_user`` call the app answers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chunkbridge.protocol_specs.human_in_the_loop import QUESTION_TOOL, approval_question
from chunkbridge.translators.core.client_model import ClientModel
from chunkbridge.translators.core.gating import Gate

__all__ = ["ApprovalHook", "ApprovalRequests", "IssuedApproval", "SignApproval"]

Chunk = dict[str, Any]
#: ``sign(approval_id, tool_call_id, tool_name, input)``: the approval's signature.
SignApproval = Callable[[str, str, str, Any], str]


@dataclass(frozen=True, slots=True)
class IssuedApproval:
    """An approval this stream asked the app for (the gateway accepts answers only to these)."""

    approval_id: str
    tool_call_id: str
    tool_name: str


ApprovalHook = Callable[[IssuedApproval], None]


class ApprovalRequests:
    """The approval requests of one stream, for one target major."""

    def __init__(
        self, target: int, sign: SignApproval | None, on_approval: ApprovalHook | None
    ) -> None:
        self.target = target
        self._sign = sign
        self._on_approval = on_approval
        #: The approvals this stream requested, in order.
        self.issued: list[IssuedApproval] = []

    def request(self, chunk: Chunk, model: ClientModel, gate: Gate) -> Chunk | None:
        """The chunk to send for the approval request ``chunk``; ``None``: its call is settled
        already (too late to ask: dropped). A request without ids or for an unknown call goes
        on as it is, for the gate and the client model's rules."""
        approval_id, call_id = chunk.get("approvalId"), chunk.get("toolCallId")
        if not isinstance(approval_id, str) or not isinstance(call_id, str):
            return chunk  # the gate drops it
        record = model.tools.get(call_id)
        if record is None:
            return chunk  # the client-model rule makes it a data part
        if record.settled:
            return None
        signature = None
        if self._sign is not None:
            signature = self._sign(approval_id, call_id, record.name, record.input)
        issued = IssuedApproval(approval_id, call_id, record.name)
        self.issued.append(issued)
        if self._on_approval is not None:
            self._on_approval(issued)
        if self.target >= 6:
            return chunk if signature is None else {**chunk, "signature": signature}
        # ai 5: the question form (the tool call itself waits, like on 6 and 7).
        record.awaiting_approval = True
        reason = chunk.get("reason")
        question = approval_question(
            approval_id,
            call_id,
            record.name,
            reason if isinstance(reason, str) else None,
            signature,
        )
        gate.record_conversion("type:tool-approval-request->question", chunk)
        # its own tool part: named after the approval, unless a call already has that id
        form_id = approval_id if approval_id not in model.tools else f"approval-{approval_id}"
        return {
            "type": "tool-input-available",
            "toolCallId": form_id,
            "toolName": QUESTION_TOOL,
            "input": question,
        }
