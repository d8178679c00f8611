"""The items a history's OpenAI tool parts become again in the next request (the reverse of
:mod:`~chunkbridge.translators.dialects.openai_responses.tools`), as the AI SDK sends them."""

from __future__ import annotations

from typing import Any

from chunkbridge.protocol_specs.openai_responses_tools import APP_RUN_ITEMS
from chunkbridge.translators.dialects.openai_responses.tools import present

__all__ = ["app_run_items", "hosted_items"]


def _shell_run(run: Any) -> dict[str, Any]:
    run = run if isinstance(run, dict) else {}
    outcome = run.get("outcome") if isinstance(run.get("outcome"), dict) else {}
    if outcome.get("type") == "exit":
        api_outcome: dict[str, Any] = {"type": "exit", "exit_code": outcome.get("exitCode")}
    else:
        api_outcome = {"type": "timeout"}
    return {
        "stdout": run.get("stdout") or "",
        "stderr": run.get("stderr") or "",
        "outcome": api_outcome,
    }


def _app_call(kind: str, part: Any, item_id: Any) -> dict[str, Any]:
    value: dict[str, Any] = part.input if isinstance(part.input, dict) else {}
    action: dict[str, Any] = value["action"] if isinstance(value.get("action"), dict) else {}
    if kind == "shell_call":
        shell = present(
            commands=action.get("commands") or [],
            timeout_ms=action.get("timeoutMs"),
            max_output_length=action.get("maxOutputLength"),
        )
        call = {"call_id": part.toolCallId, "id": item_id, "status": "completed", "action": shell}
    elif kind == "local_shell_call":
        command = present(
            type="exec",
            command=action.get("command") or [],
            timeout_ms=action.get("timeoutMs"),
            user=action.get("user"),
            working_directory=action.get("workingDirectory"),
            env=action.get("env"),
        )
        call = {"call_id": part.toolCallId, "id": item_id, "action": command}
    elif kind == "apply_patch_call":
        call = {
            "call_id": value.get("callId") or part.toolCallId,
            "id": item_id,
            "status": "completed",
            "operation": value.get("operation"),
        }
    else:  # a client-side tool search
        call = {
            "id": item_id or part.toolCallId,
            "execution": "client",
            "call_id": value.get("call_id") or part.toolCallId,
            "status": "completed",
            "arguments": value.get("arguments"),
        }
    return {"type": kind, **present(**call)}


def _app_output(kind: str, part: Any) -> dict[str, Any]:
    """The app's answer in the item the API wants; a failure or a refusal as that item's
    failing form (the error text where the item has room for text)."""
    answered = part.output if part.state == "output-available" else None
    failure = part.errorText or "The user denied this tool call."
    output: dict[str, Any] = answered if isinstance(answered, dict) else {}
    if kind == "shell_call":
        if part.state != "output-available":
            runs = [{"stdout": "", "stderr": failure, "outcome": {"type": "exit", "exit_code": 1}}]
        else:
            runs = [_shell_run(run) for run in output.get("output") or []]
        result = {"max_output_length": output.get("maxOutputLength"), "output": runs}
        return {"type": "shell_call_output", "call_id": part.toolCallId, **present(**result)}
    if kind == "local_shell_call":
        text = output.get("output") if part.state == "output-available" else failure
        return {"type": "local_shell_call_output", "call_id": part.toolCallId, "output": text}
    if kind == "apply_patch_call":
        status = output.get("status") if part.state == "output-available" else "failed"
        text = output.get("output") if part.state == "output-available" else failure
        patch = present(status=status or "completed", output=text)
        return {"type": "apply_patch_call_output", "call_id": part.toolCallId, **patch}
    return {
        "type": "tool_search_output",
        "execution": "client",
        "call_id": (part.input or {}).get("call_id") or part.toolCallId,
        "status": "completed",
        "tools": output.get("tools") or [],
    }


def app_run_items(
    part: Any, name: str, declared_types: frozenset[str], item_id: Any
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """An answered call of a built-in tool the app runs (shell, local shell, patch, client tool
    search; ``name``: the tool's, OpenAI's name for it) → its call item and its output item, as
    the API wants them back; ``None`` for a function (``declared_types``: the ``type``\\s of
    the deployment's declared tools)."""
    kind = APP_RUN_ITEMS.get(name)
    if kind is None or name not in declared_types:
        return None
    if kind == "tool_search_call" and not (
        isinstance(part.input, dict) and part.input.get("call_id")
    ):
        return None
    return _app_call(kind, part, item_id), _app_output(kind, part)


def _web_search_call(item_id: str, output: dict[str, Any]) -> dict[str, Any] | None:
    action = output.get("action") if isinstance(output.get("action"), dict) else None
    if action is None:
        return None
    kind = action.get("type")
    if kind == "search":
        api_action = {"type": "search", **present(query=action.get("query"))}
        api_action.update(present(queries=action.get("queries"), sources=output.get("sources")))
    elif kind == "openPage":
        api_action = {"type": "open_page", "url": action.get("url")}
    elif kind == "findInPage":
        api_action = {"type": "find_in_page", "url": action.get("url")}
        api_action["pattern"] = action.get("pattern")
    else:
        return None
    return {"type": "web_search_call", "id": item_id, "status": "completed", "action": api_action}


def hosted_items(part: Any, name: str, item_id: Any) -> list[dict[str, Any]]:
    """A tool OpenAI ran (``name``: OpenAI's name for it) → the items that carry it back in
    full (a web search, a hosted shell, a hosted tool search, a program and their outputs), so
    the model sees what it did without the API keeping the response (``store: false``). Code
    interpreter, file search, image generation and MCP calls have no input form: the text that
    followed them stands for them."""
    done = part.state == "output-available"
    if part.state not in ("input-available", "output-available"):
        return []
    # The output item's own id, where the client kept it (ai 6 and 7: ``resultProviderMetadata``).
    result_meta = (getattr(part, "resultProviderMetadata", None) or {}).get("openai") or {}
    result_id = {"id": result_meta["itemId"]} if isinstance(result_meta.get("itemId"), str) else {}
    value: dict[str, Any] = part.input if isinstance(part.input, dict) else {}
    output: dict[str, Any] = part.output if done and isinstance(part.output, dict) else {}
    if name == "web_search":
        call = _web_search_call(item_id or part.toolCallId, output) if done else None
        return [call] if call is not None else []
    if name == "shell":
        items = [_app_call("shell_call", part, item_id)]
        return [*items, _app_output("shell_call", part)] if done else items
    if name == "tool_search":
        call = {
            "type": "tool_search_call",
            "id": item_id or part.toolCallId,
            "execution": "server",
            "call_id": None,
            "status": "completed",
            "arguments": value.get("arguments"),
        }
        if not done:
            return [call]
        result = {"type": "tool_search_output", **result_id, "execution": "server"}
        result["call_id"] = None
        return [call, {**result, "status": "completed", "tools": output.get("tools") or []}]
    if name in ("program", "programmatic_tool_calling"):  # (the name chunkbridge gave it before)
        program = {"type": "program", "id": item_id or part.toolCallId, "call_id": part.toolCallId}
        program.update(code=value.get("code"), fingerprint=value.get("fingerprint"))
        if not done:
            return [program]
        result = {"type": "program_output", **result_id, "call_id": part.toolCallId}
        return [program, {**result, "result": output.get("result"), "status": output.get("status")}]
    return []
