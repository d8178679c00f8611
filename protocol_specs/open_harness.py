"""Agent-harness runtime events (dialect ``open-harness``): a flow runtime running agents as nodes.

Source: ``shared/specs/seed-protocols.md`` §2 and "What real deployments send". The runtime is
driven by :func:`send_frame`; :func:`abort_frame` stops a run. Events carry ``type`` strings such as
``agent:text:delta``.

Mapping (translator: ``translators/dialects/open_harness/``), decisions and reasons:

=================================  ================================================================
upstream event                     UI chunks
=================================  ================================================================
``agent:text:delta``               ``text-start`` (first) / ``text-delta``; text from ``delta`` or,
                                   as the real runtime sends it, ``content``; an open reasoning
                                   part ends
``agent:thinking:delta``           ``reasoning-start`` / ``reasoning-delta``; an open text part
                                   ends
``agent:text``, ``agent:thinking`  complete events repeating the deltas: they end the open part and
                                   are never appended twice; their text is sent only when no delta
                                   was streamed for that part
``agent:tool``                     one event with input and output → ``tool-input-available`` then
                                   ``tool-output-available`` (``tool-output-error`` for ``error``);
                                   as two events (input first, output or error later) the second is
                                   matched by ``toolCallId``, or without one by tool name (oldest
                                   open call first). Ids are generated when missing.
                                   ``providerExecuted`` is set: the runtime runs its tools
``agent:start``                    bookkeeping (a step is opened on demand)
``agent:complete``                 open parts end; it ends the turn only when the run has no
                                   ``flow:*`` framing
``node:start``                     a step boundary (``start-step``): multi-agent visibility
``node:complete``                  ``data-node-output`` ``{nodeId, output}``, then ``finish-step``
``flow:start`` / ``flow:status``   ``data-flow-status`` ``{status, flowName}`` (one part, ``id``
                                   ``flow-status``, updated in place)
``flow:status`` with a terminal    ends the flow as ``flow:complete`` does (the runtime does
status (:data:`FLOW_STATUS_ENDS`)  not always send ``flow:complete`` after it): ``complete`` →
                                   ``finish`` (stop); ``failed`` → ``error`` (the event's
                                   ``error`` or ``message``), ``finish`` (error); ``cancelled`` →
                                   ``finish`` (interrupted; ``other`` below ai 7). An upstream
                                   that closes after it is not a truncated turn
``flow:complete``                  ``data-flow-status`` (complete), ``finish`` (stop)
``agent:error``, ``node:error``,   ``error`` with the runtime's message, ``finish`` (error)
``flow:error``
``recording:*``, ``run:*``         bookkeeping, deliberately not mapped (counted)
=================================  ================================================================
"""

from __future__ import annotations

from typing import Any, Final, Literal

__all__ = [
    "BOOKKEEPING_PREFIXES",
    "FLOW_STATUS_ENDS",
    "FLOW_STATUS_PART_ID",
    "abort_frame",
    "send_frame",
]


BOOKKEEPING_PREFIXES: Final = ("recording:", "run:")
FLOW_STATUS_PART_ID: Final = "flow-status"

FlowEnd = Literal["complete", "failed", "cancelled"]
#: ``flow:status`` values that mean the flow is over (lower-cased), and how it ended. Any other
#: status (``running``, ``paused``, ``waiting``…) is progress.
FLOW_STATUS_ENDS: Final[dict[str, FlowEnd]] = {
    **dict.fromkeys(
        ("complete", "completed", "done", "finished", "success", "succeeded"), "complete"
    ),
    **dict.fromkeys(("failed", "failure", "error", "errored"), "failed"),
    **dict.fromkeys(("cancelled", "canceled", "aborted", "stopped", "interrupted"), "cancelled"),
}


def send_frame(run_id: str, message: str) -> dict[str, Any]:
    return {"type": "send", "runId": run_id, "message": message}


def abort_frame(run_id: str) -> dict[str, Any]:
    return {"type": "abort", "runId": run_id}
