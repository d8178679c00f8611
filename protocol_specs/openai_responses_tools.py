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
``program``                 program     ``{code, fingerprint}``          ``program_output``:
                                                                         ``{result, status}``
==========================  ==========  ===============================  ==========================

A tool is named as the stream names it: the item's type without ``_call`` (the program tool,
declared as ``programmatic_tool_calling``, is ``program``, as its items are); the deployment's
``tool_names`` gives a tool the name the app knows it by, in the stream and back. The app-run
calls and hosted results are keyed by the item's ``call_id`` (what the app answers with); hosted
ones without a ``call_id`` by the item id. A program's ``program_output`` comes in the response
to the continuation that answered the calls it made: it lands on the program's part, which that
continuation sent back waiting (``program`` without its output). The mapping both ways is the
dialect's (``translators/dialects/openai_responses/``: ``tools.py`` for the stream,
``tool_history.py`` for the items the history's tool parts become again).
"""

from __future__ import annotations

from typing import Final

__all__ = ["ALWAYS_APP_RUN", "APP_RUN_ITEMS", "HOSTED_ENVIRONMENTS", "TOOL_NAMES"]

#: Item types the app always runs.
ALWAYS_APP_RUN: Final = frozenset(
    {"apply_patch_call", "local_shell_call", "computer_call", "custom_tool_call"}
)

#: ``shell_call.environment.type`` values (and the declared tool's, in the AI SDK's spelling)
#: that make OpenAI run the shell.
HOSTED_ENVIRONMENTS: Final = frozenset(
    {"container_auto", "container_reference", "containerAuto", "containerReference"}
)

#: The tool of a result item (the others' is their type without its ``_call`` suffix).
TOOL_NAMES: Final[dict[str, str]] = {
    "program_output": "program",
    "shell_call_output": "shell",
    "tool_search_output": "tool_search",
}


#: A declared tool's ``type`` → the item its calls are (the app runs them and answers).
APP_RUN_ITEMS: Final[dict[str, str]] = {
    "shell": "shell_call",
    "local_shell": "local_shell_call",
    "apply_patch": "apply_patch_call",
    "tool_search": "tool_search_call",
}
