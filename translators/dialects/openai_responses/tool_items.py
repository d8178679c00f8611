"""The tool items of one OpenAI response, as the translator meets them: app-run calls (the
response then ends with ``tool-calls``), calls OpenAI runs (their results in the same response,
sometimes as items of their own) and the sources a web or file search found."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chunkbridge.kit import Chunk, IdFactory
from chunkbridge.translators.dialects.openai_responses import tools
from chunkbridge.translators.dialects.openai_responses.tools import (
    PROVIDER,
    hosted_id,
    web_search_output,
)

__all__ = ["ToolItems"]

#: App-run items announced when they begin (their input when they end), as the AI SDK places
#: them; the others are announced whole at their end.
STARTED_APP_ITEMS = frozenset({"custom_tool_call", "computer_call", "apply_patch_call"})


class ToolItems:
    """Chunks for tool items, and what the response's end needs to know of them."""

    def __init__(self, ids: IdFactory, dynamic: bool, names: Mapping[str, str]) -> None:
        self.ids = ids
        self._dynamic = dynamic
        #: The deployment's names for OpenAI's tools (``tool_names``).
        self.names = names
        #: A call the app runs came: the response ends with ``tool-calls``.
        self.function_call = False
        #: hosted tool searches whose ``tool_search_output`` (without a call id) is to come.
        self.hosted_searches: list[str] = []
        #: A web search listed its sources (URL citations then add none).
        self.search_sources = False
        #: A file search listed its files as sources (file citations then add none).
        self.file_sources = False
        self.retrieved: set[str] = set()

    def tool_name(self, kind: str) -> str:
        return tools.tool_name(kind, self.names)

    def flags(self, **flags: Any) -> dict[str, Any]:
        """What every chunk of a call carries (the translator's ``tool_flags``)."""
        if self._dynamic:
            flags["dynamic"] = True
        return flags

    def app_tool_done(self, kind: str, item_id: str, item: dict[str, Any]) -> list[Chunk]:
        """A call the app runs whose input is not JSON arguments: a custom tool's free text,
        a computer-use action, a shell command, a patch, a client-side tool search."""
        self.function_call = True
        if kind == "custom_tool_call":
            tool_input = item.get("input")
        elif kind == "computer_call":
            tool_input = item.get("action")
        else:
            tool_input = tools.tool_input(item)
        base = self.app_tool_base(kind, item_id, item)
        meta = {PROVIDER: {"itemId": item_id}}
        started = [] if kind in STARTED_APP_ITEMS else [{"type": "tool-input-start", **base}]
        return [
            *started,
            {"type": "tool-input-available", **base, "input": tool_input, "providerMetadata": meta},
        ]

    def app_tool_base(self, kind: str, item_id: str, item: dict[str, Any]) -> dict[str, Any]:
        name = item.get("name") if kind == "custom_tool_call" else self.tool_name(kind)
        return {
            "toolCallId": item.get("call_id") or item_id,
            "toolName": name if isinstance(name, str) and name else kind,
            **self.flags(),
        }

    def hosted_call(
        self, kind: str, call_id: str, item_id: str, item: dict[str, Any], start: bool = True
    ) -> list[Chunk]:
        """A call OpenAI runs whose result is another item (a program, a hosted shell or tool
        search): its input now, its output when the result item comes."""
        flags = self.flags(providerExecuted=True)
        base = {"toolCallId": call_id, "toolName": self.tool_name(kind), **flags}
        meta = {PROVIDER: {"itemId": item_id}}
        out: list[Chunk] = [{"type": "tool-input-start", **base}] if start else []
        tool_input = tools.tool_input(item)
        out.append(
            {"type": "tool-input-available", **base, "input": tool_input, "providerMetadata": meta}
        )
        return out

    def hosted_result(self, kind: str, item_id: str, item: dict[str, Any]) -> list[Chunk]:
        call_id = item.get("call_id")
        if not isinstance(call_id, str) and kind == "tool_search_output" and self.hosted_searches:
            call_id = self.hosted_searches.pop(0)
        chunk: Chunk = {
            "type": "tool-output-available",
            "toolCallId": call_id if isinstance(call_id, str) else item_id,
            "output": tools.tool_output(item),
            **self.flags(providerExecuted=True),
        }
        if kind != "shell_call_output":  # the shell's output is its call's (the AI SDK's shape)
            chunk["providerMetadata"] = {PROVIDER: {"itemId": item_id}}
        return [chunk]

    def provider_tool_done(self, kind: str, item_id: str, item: dict[str, Any]) -> list[Chunk]:
        flags = self.flags(providerExecuted=True)
        call_id = hosted_id(item, item_id)
        if kind in ("shell_call", "tool_search_call"):  # the result is an item of its own
            if kind == "tool_search_call":
                self.hosted_searches.append(call_id)
            return self.hosted_call(kind, call_id, item_id, item, start=False)
        status = item.get("status")
        finished = status in (None, "completed") or item.get("result") is not None
        base = {"toolCallId": call_id, "toolName": self.tool_name(kind), **flags}
        out: list[Chunk] = [
            {"type": "tool-input-available", **base, "input": tools.tool_input(item)}
        ]
        if not finished:  # an image still "generating" with its image attached is finished
            text = f"{kind} ended with status {status}"
            return [*out, {"type": "tool-output-error", **base, "errorText": text}]
        if kind == "web_search_call":
            action = item.get("action")
            output: Any = web_search_output(action)
            out.append(
                {"type": "tool-output-available", "toolCallId": call_id, "output": output, **flags}
            )
            sources = action.get("sources") if isinstance(action, dict) else None
            for source in sources if isinstance(sources, list) else ():
                if isinstance(source, dict) and isinstance(source.get("url"), str):
                    self.search_sources = True
                    out.append(
                        {"type": "source-url", "sourceId": self.ids("source"), "url": source["url"]}
                    )
            return out
        output = tools.tool_output(item)
        out.append(
            {"type": "tool-output-available", "toolCallId": call_id, "output": output, **flags}
        )
        if kind == "file_search_call":
            out += self.file_search_sources(item)
        return out

    def file_search_sources(self, item: dict[str, Any]) -> list[Chunk]:
        """A document source per file the search retrieved (once per file), as the AI SDK
        lists them; file citations in the text then add none."""
        out: list[Chunk] = []
        for result in item.get("results") or ():
            file_id = result.get("file_id") if isinstance(result, dict) else None
            if not isinstance(file_id, str):
                continue
            self.file_sources = True
            if file_id in self.retrieved:
                continue
            self.retrieved.add(file_id)
            name = result.get("filename") if isinstance(result.get("filename"), str) else file_id
            meta = {"type": "file_search", "fileId": file_id}
            out.append(
                {
                    "type": "source-document",
                    "sourceId": self.ids("source"),
                    "mediaType": "text/plain",
                    "title": name,
                    "filename": name,
                    "providerMetadata": {PROVIDER: meta},
                }
            )
        return out
