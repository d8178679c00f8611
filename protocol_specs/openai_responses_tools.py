"""OpenAI Responses tool items (dialect ``openai-responses``): who runs each one, and the input
and output shapes the AI SDK's ``@ai-sdk/openai`` provider gives them, which apps and
``convertToModelMessages`` read.

A tool item is run either by OpenAI (the result arrives in the same response) or by the app
(the response ends with ``tool-calls`` and the app sends the result back). The item's type does
not decide it: ``shell_call`` is OpenAI's when it names a hosted ``environment``
(``container_auto`` / ``container_reference``) or when the deployment declares the ``shell`` tool
with one, the app's otherwise; ``tool_search_call`` says so in its ``execution`` (``server`` /
``client``). ``apply_patch_call``, ``local_shell_call``, ``computer_call`` and ``custom_tool_call``
are always the app's; ``code_interpreter_call``, ``file_search_call``, ``image_generation_call``,
``web_search_call`` and ``program`` (programmatic tool calling) always OpenAI's.

==========================  ==========  ===============================  ==========================
item                        tool name   input                            output
==========================  ==========  ===============================  ==========================
``shell_call``              shell       ``{action: {commands,            ``shell_call_output``:
                                        timeoutMs?, maxOutputLength?}}`` ``{output: [{stdout,
                                                                         stderr, outcome}],
                                                                         maxOutputLength?}``
``apply_patch_call``        apply_patch ``{callId, operation}``          (the app's)
``local_shell_call``        local_shell ``{action: {type: "exec",        (the app's)
                                        command, timeoutMs?, user?,
                                        workingDirectory?, env?}}``
``tool_search_call``        tool_search ``{arguments, call_id}``         ``tool_search_output``:
                                        (``call_id`` null when hosted)   ``{tools}``
``code_interpreter_call``   code_inter- ``{code, containerId}``          ``{outputs}``
                            preter
``image_generation_call``   image_gene- ``{}``                           ``{result}`` (base64), also
                            ration                                       when the status is still
                                                                         ``generating`` (Azure)
``file_search_call``        file_search ``{}``                           ``{queries, results:
                                                                         [{attributes, fileId,
                                                                         filename, score, text}]}``
``program``                 programma-  ``{code, fingerprint}``          ``program_output``:
                            tic_tool_                                    ``{result, status}``
                            calling
==========================  ==========  ===============================  ==========================

The app-run calls and hosted results are keyed by the item's ``call_id`` (what the app answers
with); hosted ones without a ``call_id`` by the item id.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "ALWAYS_APP_RUN",
    "HOSTED_ENVIRONMENTS",
    "app_run",
    "tool_input",
    "tool_name",
    "tool_output",
]

#: Item types the app always runs.
ALWAYS_APP_RUN: Final = frozenset(
    {"apply_patch_call", "local_shell_call", "computer_call", "custom_tool_call"}
)

#: ``shell_call.environment.type`` values (and the declared tool's, in the AI SDK's spelling)
#: that make OpenAI run the shell.
HOSTED_ENVIRONMENTS: Final = frozenset(
    {"container_auto", "container_reference", "containerAuto", "containerReference"}
)

_NAMES: Final[dict[str, str]] = {
    "program": "programmatic_tool_calling",
    "program_output": "programmatic_tool_calling",
    "shell_call_output": "shell",
    "tool_search_output": "tool_search",
}


def tool_name(kind: str) -> str:
    """The tool name of an item type (``shell_call`` → ``shell``)."""
    return _NAMES.get(kind) or kind.removesuffix("_call")


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


def _present(**values: Any) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}


def tool_input(item: Mapping[str, Any]) -> Any:
    """The input of a tool item, in the AI SDK's shape (``{}`` for items that have none)."""
    kind = item.get("type")
    action: dict[str, Any] = item["action"] if isinstance(item.get("action"), dict) else {}
    if kind == "shell_call":
        return {
            "action": _present(
                commands=action.get("commands"),
                timeoutMs=action.get("timeout_ms"),
                maxOutputLength=action.get("max_output_length"),
            )
        }
    if kind == "local_shell_call":
        shell = _present(
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
        return _present(maxOutputLength=item.get("max_output_length"), output=output)
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


# -- back to the API -----------------------------------------------------------------------------

#: A declared tool's ``type`` → the item its calls are (the app runs them and answers).
APP_RUN_ITEMS: Final[dict[str, str]] = {
    "shell": "shell_call",
    "local_shell": "local_shell_call",
    "apply_patch": "apply_patch_call",
    "tool_search": "tool_search_call",
}


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
        shell = _present(
            commands=action.get("commands") or [],
            timeout_ms=action.get("timeoutMs"),
            max_output_length=action.get("maxOutputLength"),
        )
        call = {"call_id": part.toolCallId, "id": item_id, "status": "completed", "action": shell}
    elif kind == "local_shell_call":
        command = _present(
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
    return {"type": kind, **_present(**call)}


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
        return {"type": "shell_call_output", "call_id": part.toolCallId, **_present(**result)}
    if kind == "local_shell_call":
        text = output.get("output") if part.state == "output-available" else failure
        return {"type": "local_shell_call_output", "call_id": part.toolCallId, "output": text}
    if kind == "apply_patch_call":
        status = output.get("status") if part.state == "output-available" else "failed"
        text = output.get("output") if part.state == "output-available" else failure
        patch = _present(status=status or "completed", output=text)
        return {"type": "apply_patch_call_output", "call_id": part.toolCallId, **patch}
    return {
        "type": "tool_search_output",
        "execution": "client",
        "call_id": (part.input or {}).get("call_id") or part.toolCallId,
        "status": "completed",
        "tools": output.get("tools") or [],
    }


def app_run_items(
    part: Any, declared_types: frozenset[str], item_id: Any
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """An answered call of a built-in tool the app runs (shell, local shell, patch, client tool
    search) → its call item and its output item, as the API wants them back; ``None`` for a
    function (``declared_types``: the ``type``\\s of the deployment's declared tools)."""
    kind = APP_RUN_ITEMS.get(part.tool_name)
    if kind is None or part.tool_name not in declared_types:
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
        api_action = {"type": "search", **_present(query=action.get("query"))}
        api_action.update(_present(queries=action.get("queries"), sources=output.get("sources")))
    elif kind == "openPage":
        api_action = {"type": "open_page", "url": action.get("url")}
    elif kind == "findInPage":
        api_action = {"type": "find_in_page", "url": action.get("url")}
        api_action["pattern"] = action.get("pattern")
    else:
        return None
    return {"type": "web_search_call", "id": item_id, "status": "completed", "action": api_action}


def hosted_items(part: Any, item_id: Any) -> list[dict[str, Any]]:
    """A tool OpenAI ran → the items that carry it back in full (a web search, a hosted shell,
    a hosted tool search, a program and their outputs), so the model sees what it did without
    the API keeping the response (``store: false``). Code interpreter, file search, image
    generation and MCP calls have no input form: the text that followed them stands for them."""
    name, done = part.tool_name, part.state == "output-available"
    if part.state not in ("input-available", "output-available"):
        return []
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
        result = {"type": "tool_search_output", "execution": "server", "call_id": None}
        return [call, {**result, "status": "completed", "tools": output.get("tools") or []}]
    if name == "programmatic_tool_calling":
        program = {"type": "program", "id": item_id or part.toolCallId, "call_id": part.toolCallId}
        program.update(code=value.get("code"), fingerprint=value.get("fingerprint"))
        if not done:
            return [program]
        result = {"type": "program_output", "call_id": part.toolCallId}
        return [program, {**result, "result": output.get("result"), "status": output.get("status")}]
    return []
