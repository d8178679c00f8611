"""What an MCP tool returns reaches the app and the model whole: text, images, embedded resources
and resource links — from the MCP project's own reference server (``server-everything``, npm,
TypeScript SDK) over stdio and Streamable HTTP, through every provider dialect's next request,
judged by the real ai 5, 6 and 7 clients; and beside the AI SDK's own loop on the same server."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import orjson
import pytest
from mcp.types import (
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    TextContent,
    TextResourceContents,
)

from chunkbridge.gateway.tool_settings import ToolServerSettings
from chunkbridge.gateway.tools.mcp_results import outcome_of
from chunkbridge.kit import Media, result_pieces
from tests.agent_responses import PROVIDER_DIALECTS, answer
from tests.conformance.harness import run_script
from tests.gateway_harness import post, user_body
from tests.mcp.everything import everything_over, running_everything_http
from tests.test_agent_loop import Model, agent_gateway, steps_script

PNG = "iVBORw0KGgo="  # (the first bytes of a PNG: a block's data is only carried here)

# -- the result's pieces and budgets, without I/O ------------------------------------------------


def test_an_mcp_result_reads_as_text_and_media_in_order() -> None:
    output = {
        "content": [
            {"type": "text", "text": "Here:"},
            {"type": "image", "data": PNG, "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "test://a", "text": "alpha"}},
            {
                "type": "resource",
                "resource": {"uri": "test://b", "blob": PNG, "mimeType": "image/png"},
            },
            {
                "type": "resource",
                "resource": {"uri": "test://z", "blob": "AAAA", "mimeType": "application/gzip"},
            },
            {"type": "resource_link", "uri": "test://c", "name": "c.txt", "description": "a file"},
            {"type": "made-up", "x": 1},
        ],
        "structuredContent": {"ignored": "by the model"},
        "isError": False,
    }
    assert result_pieces(output) == [
        "Here:",
        Media("image/png", PNG),
        "Resource test://a:\nalpha",
        "Resource test://b:",
        Media("image/png", PNG),
        "Resource test://z (application/gzip, 3 bytes): not shown.",
        "Resource link: c.txt <test://c> — a file",
        '{"type":"made-up","x":1}',
    ]
    assert result_pieces({"result": 5}) is None  # any other output: JSON, as before
    assert result_pieces("text") is None


def test_a_result_is_bounded_by_its_text_and_media_budgets() -> None:
    image = ImageContent(type="image", data=PNG * 100, mimeType="image/png")
    result = CallToolResult(
        content=[
            TextContent(type="text", text="x" * 30),
            image,
            ImageContent(type="image", data=PNG, mimeType="image/png"),
            EmbeddedResource(
                type="resource", resource=TextResourceContents(uri="test://a", text="y" * 30)
            ),
        ],
        structuredContent={"long": "z" * 100},
    )
    settings = ToolServerSettings(command="x", max_output_bytes=40, max_media_bytes=500)
    outcome = outcome_of("tool", result, settings)
    assert outcome.error is None
    content = outcome.output["content"]
    assert content[0] == {"type": "text", "text": "x" * 30}
    assert content[1]["type"] == "text" and "left out" in content[1]["text"]  # 1,200 > 500
    assert content[2] == {"type": "image", "data": PNG, "mimeType": "image/png"}  # it fits
    assert content[3]["resource"]["text"] == "y" * 10 + "\n[output cut: 30 bytes, 10 kept]"
    assert "structuredContent" not in outcome.output
    assert "structured content left out" in content[-1]["text"]
    failed = outcome_of("tool", CallToolResult(content=[image], isError=True), settings)
    assert failed.error == "[image]"


# -- the reference server, end to end --------------------------------------------------------------

CALLS: list[tuple[str, list[Any]]] = [
    (
        "Fetching.",
        [
            ("c_img", "get-tiny-image", {}),
            ("c_res", "get-resource-reference", {"resourceType": "Text", "resourceId": 1}),
            ("c_links", "get-resource-links", {"count": 2}),
        ],
    ),
    ("Seen it.", []),
]


def images_sent(dialect: str, request: dict[str, Any]) -> list[tuple[str, str]]:
    """The images a provider request gives the model in its tool results: (type, base64)."""
    found: list[tuple[str, str]] = []
    if dialect == "anthropic-messages":
        for message in request["messages"]:
            for block in message["content"]:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    for item in block["content"] if isinstance(block["content"], list) else []:
                        if item["type"] == "image":
                            found.append((item["source"]["media_type"], item["source"]["data"]))
    elif dialect == "openai-responses":
        for item in request["input"]:
            if item.get("type") == "function_call_output" and isinstance(item["output"], list):
                for piece in item["output"]:
                    if piece["type"] == "input_image":
                        head, _, data = piece["image_url"].partition(";base64,")
                        found.append((head.removeprefix("data:"), data))
    elif dialect == "openai-chat":  # text only: the AI SDK's JSON of the content
        for message in request["messages"]:
            if message["role"] == "tool" and message["content"].startswith("["):
                for piece in orjson.loads(message["content"]):
                    if piece["type"] == "file":
                        found.append((piece["mediaType"], piece["data"]["data"]))
    else:
        for content in request["contents"]:
            for part in content["parts"]:
                for inline in part.get("functionResponse", {}).get("parts", []):
                    found.append((inline["inlineData"]["mimeType"], inline["inlineData"]["data"]))
    return found


@pytest.mark.parametrize(
    ("dialect", "transport"),
    [*((d, "stdio") for d in PROVIDER_DIALECTS), ("anthropic-messages", "http")],
)
async def test_images_resources_and_links_reach_the_app_and_the_model(
    dialect: str, transport: str, real_clients: Any
) -> None:
    model = Model(steps_script(dialect, CALLS))
    with everything_over(transport, allow=["get-tiny-image", "get-resource-*"]) as server:
        async with agent_gateway(model, dialect, {"everything": server}) as base:
            response = await post(base, "s1", user_body("show me", id="c1"))
    assert response.status_code == 200, response.text
    for major, verdict in real_clients.check(response.content).items():
        assert verdict.ok and verdict.finish_reason == "stop", (major, verdict.fatal)
        outputs = {p["toolName"]: p["output"] for p in verdict.parts("dynamic-tool")}
        (image,) = [b for b in outputs["get-tiny-image"]["content"] if b["type"] == "image"]
        assert (
            image["mimeType"] == "image/png" and base64.b64decode(image["data"])[:4] == b"\x89PNG"
        )
        (resource,) = [
            b for b in outputs["get-resource-reference"]["content"] if b["type"] == "resource"
        ]
        assert resource["resource"]["uri"].endswith("/1") and resource["resource"]["text"]
        links = [
            b for b in outputs["get-resource-links"]["content"] if b["type"] == "resource_link"
        ]
        assert len(links) == 2
    assert len(model.requests) == 2
    second = model.requests[1]
    assert images_sent(dialect, second) == [("image/png", image["data"])]
    heard = orjson.dumps(second).decode()
    assert (
        resource["resource"]["text"] in heard.replace("\\n", "\n")
        or orjson.dumps(resource["resource"]["text"]).decode()[1:-1] in heard
    )
    for link in links:
        assert link["uri"] in heard


async def test_an_image_reaches_the_model_as_the_ai_sdks_own_loop_sends_it(
    real_clients: Any,
) -> None:
    """The AI SDK's loop (``streamText`` + ``@ai-sdk/mcp``) and chunkbridge's on the same server
    and the same scripted Anthropic model: the same tool output in the UI, and the same
    ``tool_result`` content in the model's next request."""
    steps = [("Looking.", [("c_img", "get-tiny-image", {})]), ("A logo.", [])]
    with running_everything_http() as url:
        payload = {
            "responses": [
                answer("anthropic-messages", t, c, n) for n, (t, c) in enumerate(steps, 1)
            ],
            "prompt": "show me",
            "steps": 5,
            "mcp_url": url,
        }
        theirs = await asyncio.to_thread(run_script, "agent_loop.mjs", payload, 120)
        model = Model(steps_script("anthropic-messages", steps))
        tools = {"everything": {"url": url, "allow": ["get-tiny-image"]}}
        async with agent_gateway(model, "anthropic-messages", tools, target=7) as base:
            ours = await post(base, "s1", user_body("show me", id="c1"))
    their_body = base64.b64decode(theirs["body_b64"])
    their_v, our_v = (real_clients.check(b, (7,))[7] for b in (their_body, ours.content))
    assert their_v.ok and our_v.ok, (their_v.fatal, our_v.fatal)
    (their_part,) = their_v.parts("dynamic-tool")
    (our_part,) = our_v.parts("dynamic-tool")
    assert our_part["output"] == their_part["output"]

    def tool_result(request: dict[str, Any]) -> Any:
        blocks = [b for m in request["messages"] for b in m["content"] if isinstance(b, dict)]
        (result,) = [b for b in blocks if b.get("type") == "tool_result"]
        return result["content"]

    assert tool_result(model.requests[1]) == tool_result(theirs["requests"][1])
