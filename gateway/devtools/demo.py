"""Demo-mode routes: the chat page at ``/`` and the demo upstream's event log for it (the page
says what to try: the dialect demo's cues, or the agent demo's)."""

from __future__ import annotations

import html
from importlib.resources import files

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from chunkbridge.gateway.devtools.agent_demo import HINTS as AGENT_HINTS
from chunkbridge.gateway.devtools.upstreams import DemoHttpUpstream, DemoUpstream

__all__ = ["demo_routes"]

#: The ``busy`` policies the page knows (its script gets the name as a string literal).
BUSY_POLICIES = ("reject", "queue", "interrupt", "steer")

HINTS = "try “slow” (then Stop), “fail”, “ask me”, “ask in passing” or “approve”"
#: What the page says with a ``busy`` policy other than reject.
BUSY_HINT = " · busy = {busy}: send another message while an answer streams"


def demo_routes(
    upstream: DemoUpstream | DemoHttpUpstream,
    dialect: str,
    *,
    agent: bool = False,
    traces: bool = False,
    busy: str = "reject",
) -> list[Route]:
    """The page (``traces``: with its trace panel, the routes of
    :mod:`~chunkbridge.gateway.devtools.traces` being served; ``busy``: the gateway's policy,
    which keeps Send on while an answer streams unless it is reject) and the upstream's event
    log."""
    page = (
        files("chunkbridge.gateway.devtools")
        .joinpath("static/demo.html")
        .read_text(encoding="utf-8")
    )
    if agent:
        hints, title = AGENT_HINTS, f"{dialect} model + gateway-run MCP tools"
    else:
        hints, title = HINTS, f"{dialect} upstream"
    if busy != "reject":
        hints += BUSY_HINT.format(busy=busy)
    page = page.replace("{{dialect}}", html.escape(title)).replace("{{hints}}", html.escape(hints))
    page = page.replace("{{traces}}", "true" if traces else "false")
    page = page.replace("{{busy}}", busy if busy in BUSY_POLICIES else "reject")

    async def index(request: Request) -> Response:
        return HTMLResponse(page)

    async def upstream_events(request: Request) -> Response:
        session = request.path_params["session_id"]
        return JSONResponse(
            {
                "sent": list(upstream.sent.get(session, ())),
                "received": list(upstream.received.get(session, ())),
            }
        )

    return [
        Route("/", index, methods=["GET"]),
        Route("/demo/upstream-events/{session_id:str}", upstream_events, methods=["GET"]),
    ]
