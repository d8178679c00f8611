"""Questions and tool approvals through ``useChat``: chunkbridge's conventions, stated once.

Agents stop to ask. An upstream's question (agent-ops ``question``, an AG-UI interrupt that names
no tool call, pi's ``extension_ui_request`` select/input/editor) and an upstream's request to
approve a tool call (an agent-ops tool update ``awaiting_approval``, an AG-UI interrupt on a tool
call, pi's ``confirm``) both end the turn and wait for the app. What the app sees:

=====================  ==========================================================================
the agent asks          client-side tool call :data:`QUESTION_TOOL` (part ``tool-ask_user``,
                        ``toolCallId`` = the question's id) at ``input-available``, ``input`` =
                        the question's fields (``question``, ``options``…); finish
                        ``tool-calls``. The app answers with ``addToolOutput`` (any JSON) or
                        ``addToolOutput({state: "output-error", errorText})`` to decline.
approval, ai 6 and 7    ``tool-approval-request`` after the tool part (``approvalId``, the
                        ``toolCallId``; ``reason`` on 7; ``signature`` when the gateway has an
                        ``approval_secret``); the part is ``approval-requested``. The app answers
                        with ``addToolApprovalResponse({id, approved, reason})``.
approval, ai 5          ai 5 has no approvals: the *question form* — a :data:`QUESTION_TOOL`
                        call whose ``toolCallId`` is the approval id (``approval-<id>`` when
                        a tool call already has that id) and whose input is
                        :func:`approval_question` (``options: ["approve", "deny"]`` and an
                        ``approval`` object naming the tool call). Answers:
                        :func:`parse_approval_answer`.
=====================  ==========================================================================

The next request continues the same assistant message (spec §5.4) and carries the answers in
the parts of its **last step** (earlier steps hold answers already delivered). The gateway turns
them into the upstream's answer (its answer frame, or the next request's body), streams the
continuation into that message, and for a denied approval starts the continuation with
``tool-output-denied`` (ai 5: ``tool-output-error`` "Tool execution was denied.").

Approvals are untrusted input: an approval answer counts only for an approval id this gateway
issued in that session and not yet answered, with the tool call it was issued for; with an
``approval_secret`` its signature must verify too (the AI SDK 7 server's scheme,
:func:`approval_signature`).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import math
import re
from decimal import Decimal
from typing import Any, Final

__all__ = [
    "APPROVAL_OPTIONS",
    "QUESTION_TOOL",
    "approval_question",
    "approval_signature",
    "canonical_json",
    "is_approval_question",
    "parse_approval_answer",
]

#: The client-side tool a question (and, on ai 5, an approval) becomes.
QUESTION_TOOL: Final = "ask_user"
#: The options of an approval's question form.
APPROVAL_OPTIONS: Final = ("approve", "deny")

_YES: Final = frozenset({"approve", "approved", "yes", "y", "allow", "ok", "true"})
_NO: Final = frozenset({"deny", "denied", "no", "n", "reject", "rejected", "false"})


def approval_question(
    approval_id: str,
    tool_call_id: str,
    tool_name: str,
    reason: str | None,
    signature: str | None = None,
) -> dict[str, Any]:
    """The input of an approval's question form (ai 5)."""
    approval: dict[str, Any] = {
        "approvalId": approval_id,
        "toolCallId": tool_call_id,
        "toolName": tool_name,
    }
    if signature is not None:
        approval["signature"] = signature
    return {
        "question": reason or f"Allow {tool_name} to run?",
        "options": list(APPROVAL_OPTIONS),
        "approval": approval,
    }


def is_approval_question(tool_input: Any) -> bool:
    """Whether an ``ask_user`` call's input is an approval's question form."""
    return isinstance(tool_input, dict) and isinstance(tool_input.get("approval"), dict)


def parse_approval_answer(output: Any, is_error: bool) -> tuple[bool, str | None] | None:
    """``(approved, reason)`` from the app's answer to an approval's question form, or ``None``
    when it is not an answer: ``"approve"``/``"deny"`` (also yes/no, approved/denied…),
    ``true``/``false``, or ``{"approved": bool, "reason"?: str}``. An error output declines,
    its text being the reason."""
    if is_error:
        return False, output if isinstance(output, str) and output else None
    if isinstance(output, bool):
        return output, None
    if isinstance(output, str):
        word = output.strip().lower()
        if word in _YES:
            return True, None
        if word in _NO:
            return False, None
        return None
    if isinstance(output, dict) and isinstance(output.get("approved"), bool):
        reason = output.get("reason")
        return output["approved"], reason if isinstance(reason, str) else None
    return None


#: Integers beyond this lose digits as JavaScript numbers (2**53).
_EXACT_INT: Final = 2**53
_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def canonical_json(value: Any) -> str:
    """JSON as the AI SDK's ``canonicalJSON`` writes it: keys sorted (by UTF-16 code units, as
    JavaScript's ``sort``), no spaces, numbers as ``JSON.stringify`` writes them. What is signed
    comes back from a JavaScript client that parsed and wrote it again (a ``1.0`` the model sent
    returns as ``1``), and must hash the same."""
    if isinstance(value, dict):
        keys = sorted(value, key=lambda key: key.encode("utf-16-be", "surrogatepass"))
        return "{" + ",".join(f"{_js_string(k)}:{canonical_json(value[k])}" for k in keys) + "}"
    if isinstance(value, list):
        return "[" + ",".join(canonical_json(item) for item in value) + "]"
    if isinstance(value, str):
        return _js_string(value)
    if isinstance(value, float) or (type(value) is int and abs(value) > _EXACT_INT):
        return _js_number(float(value))
    return json.dumps(value)


def _js_string(text: str) -> str:
    """``JSON.stringify(text)``: a lone surrogate (JSON's ``"\\ud800"``) escaped, the rest as is."""
    return _LONE_SURROGATE.sub(
        lambda match: f"\\u{ord(match[0]):04x}", json.dumps(text, ensure_ascii=False)
    )


def _js_number(number: float) -> str:
    """``JSON.stringify(number)``: ECMAScript's Number::toString over the shortest digits that
    round-trip (the digits Python's ``repr`` finds too), ``null`` for what is not finite."""
    if not math.isfinite(number):
        return "null"
    if number == 0:
        return "0"  # -0 as well
    _, digit_tuple, exponent = Decimal(repr(abs(number))).normalize().as_tuple()
    digits = "".join(map(str, digit_tuple))
    k, n = len(digits), len(digits) + int(exponent)  # the value is 0.<digits> * 10**n
    sign = "-" if number < 0 else ""
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * -n + digits
    mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
    return f"{sign}{mantissa}e{'+' if n > 0 else '-'}{abs(n - 1)}"


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def approval_signature(
    secret: str, approval_id: str, tool_call_id: str, tool_name: str, tool_input: Any
) -> str:
    """HMAC-SHA256 over ``["ai-sdk-tool-approval-v1", approvalId, toolCallId, toolName,
    sha256(canonical input)]`` (base64url), the scheme of the AI SDK 7 server's
    ``experimental_toolApprovalSecret``: it binds the approval to the tool call and its input."""
    digest = _b64url(hashlib.sha256(canonical_json(tool_input).encode()).digest())
    payload = json.dumps(
        ["ai-sdk-tool-approval-v1", approval_id, tool_call_id, tool_name, digest],
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return _b64url(hmac.new(secret.encode(), payload.encode(), hashlib.sha256).digest())
