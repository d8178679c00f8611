"""OpenAI Responses tool items in the stream: who runs each one, and the input and output the
AI SDK's ``@ai-sdk/openai`` gives them (the table: ``protocol_specs/openai_responses_tools.py``),
remote MCP calls and their approvals, and the ids and metadata of a call."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from chunkbridge.kit import Chunk
from chunkbridge.protocol_specs.openai_responses_tools import (
    ALWAYS_APP_RUN,
    HOSTED_ENVIRONMENTS,
    TOOL_NAMES,
)

__all__ = [
    "PROVIDER",
    "app_run",
    "call_meta",
    "hosted_id",
    "mcp_approval",
    "mcp_base",
    "mcp_call",
    "present",
    "tool_input",
    "tool_name",
    "tool_output",
    "web_search_output",
]

PROVIDER = "openai"


def tool_name(kind: str, names: Mapping[str, str]) -> str:
    """The tool name of an item type (``shell_call`` → ``shell``), or the app's for that tool
    (``names``: the deployment's ``tool_names``)."""
    name = TOOL_NAMES.get(kind) or kind.removesuffix("_call")
    return names.get(name, name)


def _declared_environment(tools: Mapping[str, Mapping[str, Any]], name: str) -> Any:
    for definition in tools.values():
        if definition.get("type") == name:
            environment = definition.get("environment")
            return environment.get("type") if isinstance(environment, dict) else None
    return None


def app_run(item: Mapping[str, Any], tools: Mapping[str, Mapping[str, Any]]) -> bool:
    """Whether the app runs this tool item (``tools``: the deployment's declared tools)."""
    kind = item.get("type")
    if kind in ALWAYS_APP_RUN:
        return True
    if kind == "tool_search_call":
        return item.get("execution") == "client"
    if kind == "shell_call":
        environment = item.get("environment")
        if isinstance(environment, dict) and environment.get("type") in HOSTED_ENVIRONMENTS:
            return False
        return _declared_environment(tools, "shell") not in HOSTED_ENVIRONMENTS
    return False


def present(**values: Any) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}


def tool_input(item: Mapping[str, Any]) -> Any:
    """The input of a tool item, in the AI SDK's shape (``{}`` for items that have none)."""
    kind = item.get("type")
    action: dict[str, Any] = item["action"] if isinstance(item.get("action"), dict) else {}
    if kind == "shell_call":
        return {
            "action": present(
                commands=action.get("commands"),
                timeoutMs=action.get("timeout_ms"),
                maxOutputLength=action.get("max_output_length"),
            )
        }
    if kind == "local_shell_call":
        shell = present(
            type="exec",
            command=action.get("command"),
            timeoutMs=action.get("timeout_ms"),
            user=action.get("user"),
            workingDirectory=action.get("working_directory"),
            env=action.get("env"),
        )
        return {"action": shell}
    if kind == "apply_patch_call":
        return {"callId": item.get("call_id"), "operation": item.get("operation")}
    if kind == "tool_search_call":
        hosted = item.get("execution") != "client"
        call_id = None if hosted else item.get("call_id") or item.get("id")
        return {"arguments": item.get("arguments"), "call_id": call_id}
    if kind == "code_interpreter_call":
        return {"code": item.get("code"), "containerId": item.get("container_id")}
    if kind == "program":
        return {"code": item.get("code"), "fingerprint": item.get("fingerprint")}
    return {}


def _shell_outcome(outcome: Any) -> dict[str, Any]:
    if isinstance(outcome, dict) and outcome.get("type") == "exit":
        return {"type": "exit", "exitCode": outcome.get("exit_code")}
    return {"type": "timeout"}


def tool_output(item: Mapping[str, Any]) -> Any:
    """The output of a hosted tool's result (its call item, or its ``*_output`` item)."""
    kind = item.get("type")
    if kind == "shell_call_output":
        runs: list[Any] = item["output"] if isinstance(item.get("output"), list) else []
        output = [
            {
                "stdout": run.get("stdout"),
                "stderr": run.get("stderr"),
                "outcome": _shell_outcome(run.get("outcome")),
            }
            for run in runs
            if isinstance(run, dict)
        ]
        return present(maxOutputLength=item.get("max_output_length"), output=output)
    if kind == "tool_search_output":
        return {"tools": item.get("tools")}
    if kind == "program_output":
        return {"result": item.get("result"), "status": item.get("status")}
    if kind == "code_interpreter_call":
        return {"outputs": item.get("outputs")}
    if kind == "image_generation_call":
        return {"result": item.get("result")}
    if kind == "file_search_call":
        results: Any = item.get("results")
        if not isinstance(results, list):
            return {"queries": item.get("queries"), "results": None}
        return {
            "queries": item.get("queries"),
            "results": [
                {
                    "attributes": r.get("attributes"),
                    "fileId": r.get("file_id"),
                    "filename": r.get("filename"),
                    "score": r.get("score"),
                    "text": r.get("text"),
                }
                for r in results
                if isinstance(r, dict)
            ],
        }
    return {k: v for k, v in item.items() if k not in ("id", "type")}


def web_search_output(action: Any) -> dict[str, Any]:
    """A ``web_search_call``'s ``action`` in the AI SDK's output shape."""
    if not isinstance(action, dict):
        return {}
    kind = action.get("type")
    if kind == "search":
        out: dict[str, Any] = {"action": {"type": "search"}}
        if action.get("query") is not None:
            out["action"]["query"] = action["query"]
        if action.get("queries") is not None:
            out["action"]["queries"] = action["queries"]
        if action.get("sources") is not None:
            out["sources"] = action["sources"]
        return out
    if kind == "open_page":
        return {"action": {"type": "openPage", "url": action.get("url")}}
    if kind == "find_in_page":
        return {
            "action": {
                "type": "findInPage",
                "url": action.get("url"),
                "pattern": action.get("pattern"),
            }
        }
    return {"action": action}


def hosted_id(item: dict[str, Any], item_id: str | None = None) -> str:
    """The tool call id of a hosted call: the shell's ``call_id`` (its output item names it),
    else the item id."""
    call_id = item.get("call_id")
    if item.get("type") == "shell_call" and isinstance(call_id, str):
        return call_id
    return item_id or item["id"]


def call_meta(item_id: str, item: dict[str, Any]) -> dict[str, Any]:
    """A function call's ``providerMetadata.openai``: its id, the ``namespace`` of a tool found
    by tool search, the ``caller`` of a call a program made."""
    meta: dict[str, Any] = {"itemId": item_id}
    if isinstance(item.get("namespace"), str):
        meta["namespace"] = item["namespace"]
    caller = item.get("caller")
    if isinstance(caller, dict):
        if caller.get("type") == "program":
            caller = {"type": "program", "callerId": caller.get("caller_id")}
        meta["caller"] = caller
    return meta


def mcp_base(item: dict[str, Any], flags: dict[str, Any]) -> dict[str, Any]:
    """A remote MCP tool's part, as the AI SDK names it: ``mcp.<name>``, dynamic, run by the
    provider (``flags``); a call made after an approval continues the approval's part (its id)."""
    call_id = item.get("approval_request_id") or item["id"]
    name = item.get("name") if isinstance(item.get("name"), str) else "unknown"
    return {"toolCallId": call_id, "toolName": f"mcp.{name}", **flags, "dynamic": True}


def _mcp_input(item: dict[str, Any]) -> Any:
    arguments = item.get("arguments")
    try:
        return orjson.loads(arguments) if isinstance(arguments, str) else arguments
    except orjson.JSONDecodeError:
        return arguments


def mcp_approval(item: dict[str, Any], flags: dict[str, Any]) -> list[Chunk]:
    """The provider asks before it calls a remote MCP tool (``require_approval``)."""
    base = mcp_base(item, flags)
    approval_id = base["toolCallId"]  # the call's id is the approval's
    return [
        {"type": "tool-input-start", **base},
        {"type": "tool-input-available", **base, "input": _mcp_input(item)},
        {"type": "tool-approval-request", "approvalId": approval_id, "toolCallId": approval_id},
    ]


def mcp_call(item: dict[str, Any], flags: dict[str, Any]) -> list[Chunk]:
    """A remote MCP call the provider made, with its output (or error)."""
    base = mcp_base(item, flags)
    output: dict[str, Any] = {
        "type": "call",
        "serverLabel": item.get("server_label"),
        "name": item.get("name"),
        "arguments": item.get("arguments"),
    }
    for key in ("output", "error"):
        if item.get(key) is not None:
            output[key] = item[key]
    meta = {PROVIDER: {"itemId": item["id"]}}
    ids = {k: v for k, v in base.items() if k != "toolName"}  # toolCallId included
    return [
        {"type": "tool-input-available", **base, "input": _mcp_input(item)},
        {"type": "tool-output-available", **ids, "output": output, "providerMetadata": meta},
    ]
