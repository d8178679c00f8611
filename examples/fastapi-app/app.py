"""chunkbridge inside a FastAPI app: one process serving useChat (AI SDK 5, 6 and 7) from

* /api/openai/chat — the OpenAI SDK's chat completion stream, answered with UIStreamResponse;
* /api/agent/chat  — a pydantic-ai agent, streamed natively (the `pydantic-ai` dialect);
* /api/graph/chat  — a LangGraph graph, one thread per chat (the `langgraph` dialect);
* /chat/…          — the chunkbridge gateway, mounted: chats kept in SQLite, an MCP server's
                     tools (examples/mcp-agent/calculator.py) run between model calls;
* /app/ai5/, /app/ai7/ — the React example (examples/react-usechat, `npm run build` there).

    uvicorn app:app --port 8000        # or: python app.py;  then open http://127.0.0.1:8000

Settings (environment): OPENAI_API_KEY and OPENAI_BASE_URL (the OpenAI route and the gateway:
any OpenAI-compatible server), OPENAI_MODEL, AGENT_MODEL (a pydantic-ai model name; default
"test": pydantic-ai's TestModel, no network), CHATS_DB (the SQLite file), REACT_DIST.
See README.md.
"""

from __future__ import annotations

import html
import itertools
import os
import random
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, PlainTextResponse
from fastapi.staticfiles import StaticFiles
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from openai import AsyncOpenAI
from pydantic_ai import Agent

from chunkbridge import (
    Gateway,
    GatewayConfig,
    RequestError,
    UIStreamResponse,
    create_app,
    parse_chat_request,
    request_body,
)
from chunkbridge.kit import RequestRejected
from chunkbridge.translators.dialects.langgraph import graph_input
from chunkbridge.translators.dialects.pydantic_ai import agent_input

HERE = Path(__file__).resolve().parent
MODEL = os.environ.get("OPENAI_MODEL", "gpt-4.1-mini")
# The OpenAI SDK reads OPENAI_BASE_URL itself; a local server may want no key at all.
client = AsyncOpenAI(api_key=os.environ.get("OPENAI_API_KEY") or "none", max_retries=0)

# The gateway, in front of the same provider: it keeps the chats (history = stored: the page
# sends only its newest message and the model gets the whole conversation from the store), and
# runs the calculator's MCP tools itself (save_note asks the user first: it is not read-only).
gateway = Gateway(
    GatewayConfig(
        dialect="openai-chat",
        upstream=str(client.base_url).rstrip("/"),  # https://api.openai.com/v1 by default
        store="sqlite",
        store_path=os.environ.get("CHATS_DB", "chats.sqlite3"),
        history="stored",
        tools={
            "calculator": {
                "command": sys.executable,
                "args": [str(HERE.parent / "mcp-agent" / "calculator.py")],
            }
        },
        dialect_settings={
            "openai-chat": {
                "model": MODEL,
                "api_key": client.api_key,
                "path": "/chat/completions",  # under the upstream URL, which ends in /v1
                "system": "Use the calculator's tools for arithmetic; never compute in your head.",
            }
        },
    )
)

# A pydantic-ai agent with a tool. "test" is pydantic-ai's TestModel (it calls each tool, then
# answers with their results, no network); AGENT_MODEL=openai:gpt-4.1-mini uses a real one.
agent = Agent(os.environ.get("AGENT_MODEL", "test"), instructions="Be brief.")


@agent.tool_plain
def roll_die(sides: int = 6) -> int:
    """Roll a die with this many sides."""
    return random.randint(1, sides)


# A LangGraph graph: one model node, a thread per chat (the checkpointer keeps the history).
# GenericFakeChatModel streams a canned answer word by word; put your chat model here
# (ChatOpenAI(model=...) of langchain-openai, init_chat_model(...), …).
graph_model = GenericFakeChatModel(
    messages=itertools.cycle([AIMessage("Hello from a LangGraph graph, streamed word by word.")])
)


async def call_model(state: MessagesState) -> dict[str, list[BaseMessage]]:
    return {"messages": [await graph_model.ainvoke(state["messages"])]}


graph = (
    StateGraph(MessagesState)
    .add_node("model", call_model)
    .add_edge(START, "model")
    .compile(checkpointer=InMemorySaver())
)


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    async with gateway.lifespan(), client:  # opens the SQLite store, starts the MCP server
        yield


app = FastAPI(lifespan=lifespan)


@app.exception_handler(RequestError)  # a bad body: the gateway's 400/413 texts, for useChat
@app.exception_handler(RequestRejected)  # a chat the agent library cannot take (a bad answer)
async def refused(request: Request, exc: RequestError | RequestRejected) -> PlainTextResponse:
    return PlainTextResponse(exc.client_message, getattr(exc, "status_hint", 400))


@app.post("/api/openai/chat")
async def openai_chat(request: Request) -> UIStreamResponse:
    chat = parse_chat_request(await request.body())
    body = request_body(chat, dialect="openai-chat", settings={"model": MODEL})  # stream=True
    # Handed over unawaited: the response awaits it, so a refusal (a wrong key, an unknown
    # model) ends the answer with the provider's message; Stop closes the SDK's stream.
    stream = client.chat.completions.create(**body)
    return UIStreamResponse(stream, dialect="openai-chat", request=chat)


@app.post("/api/agent/chat")
async def agent_chat(request: Request) -> UIStreamResponse:
    chat = parse_chat_request(await request.body())
    run = agent_input(chat)  # the chat as pydantic-ai's message history (and approvals)
    events = agent.run_stream_events(
        message_history=run.message_history, deferred_tool_results=run.deferred_tool_results
    )
    return UIStreamResponse(events, dialect="pydantic-ai", request=chat)


@app.post("/api/graph/chat")
async def graph_chat(request: Request) -> UIStreamResponse:
    chat = parse_chat_request(await request.body())
    events = graph.astream(
        graph_input(chat),  # the newest user message (or the answers to the graph's questions)
        {"configurable": {"thread_id": chat.id}},
        stream_mode=["messages", "updates", "custom"],
    )
    return UIStreamResponse(events, dialect="langgraph", request=chat)


# The gateway's routes: POST /chat/sessions/{session_id}/chat, GET …/chat/{chat id}/messages…
app.mount("/chat", create_app(gateway, prefix=""))

# The React example, built (`npm run build` in examples/react-usechat): /app/ai5/, /app/ai7/.
DIST = Path(os.environ.get("REACT_DIST", HERE.parent / "react-usechat" / "dist"))
BUILT = DIST.is_dir()
if BUILT:
    app.mount("/app", StaticFiles(directory=DIST, html=True))

ROUTES = {
    "OpenAI SDK": "/api/openai/chat",
    "pydantic-ai agent": "/api/agent/chat",
    "LangGraph graph": "/api/graph/chat",
    "gateway: SQLite and MCP tools (try “What is (2 + 3) × 4?”)": "/chat/sessions/demo/chat",
}


@app.get("/", response_class=HTMLResponse)
async def index() -> str:
    """Links to the React example pointed at each route (?endpoint=…; the gateway's chat is
    loaded from its store: ?stored=1)."""
    if not BUILT:
        return f"<p>Build the React example first (npm run build in examples/react-usechat): {DIST}"
    rows = []
    for name, url in ROUTES.items():
        query = f"?endpoint={url}" + ("&stored=1" if url.startswith("/chat/") else "")
        links = " ".join(f'<a href="/app/{b}/index.html{query}">{b}</a>' for b in ("ai5", "ai7"))
        rows.append(f"<li>{html.escape(name)}: <code>{url}</code> — {links}</li>")
    return f"<h1>chunkbridge in a FastAPI app</h1><ul>{''.join(rows)}</ul>"


if __name__ == "__main__":
    import uvicorn

    uvicorn.run(app, host="127.0.0.1", port=int(os.environ.get("PORT", "8000")))
