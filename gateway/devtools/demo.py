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

HINTS = "try “slow” (then Stop), “fail”, “ask me”, “ask in passing” or “approve”"


def demo_routes(
    upstream: DemoUpstream | DemoHttpUpstream,
    dialect: str,
    *,
    agent: bool = False,
    traces: bool = False,
) -> list[Route]:
    """The page (``traces``: with its trace panel, the routes of
    :mod:`~chunkbridge.gateway.devtools.traces` being served) and the upstream's event log."""
    page = (
        files("chunkbridge.gateway.devtools")
        .joinpath("static/demo.html")
        .read_text(encoding="utf-8")
    )
    if agent:
        hints, title = AGENT_HINTS, f"{dialect} model + gateway-run MCP tools"
    else:
        hints, title = HINTS, f"{dialect} upstream"
    page = page.replace("{{dialect}}", html.escape(title)).replace("{{hints}}", html.escape(hints))
    page = page.replace("{{traces}}", "true" if traces else "false")

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
