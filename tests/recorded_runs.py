"""The recorded provider streams as the differential and round-trip tests run them: which AI SDK
provider reads each, the tools its app declared, and which recordings are later responses of the
same run — each replayed as the continuation of the message the one before it ended with, the
app's calls answered, as a ``useChat`` app's automatic continuation sends it.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chunkbridge.gateway.devtools.recordings import read_frames
from chunkbridge.gateway.devtools.replay import replay_frames
from chunkbridge.gateway.registry import get_dialect
from tests.conformance.harness import Verdict

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RECORDED = FIXTURES / "recorded"

#: dialect → (the AI SDK provider that speaks the same API, the dialect's spec module, whether
#: tool call ids are generated on each side rather than sent by the provider).
PROVIDER_DIALECTS = {
    "anthropic-messages": ("anthropic", "chunkbridge.protocol_specs.anthropic_messages", False),
    "openai-responses": ("openai", "chunkbridge.protocol_specs.openai_responses", False),
    "openai-chat": ("openai-compatible", "chunkbridge.protocol_specs.openai_chat", False),
    "gemini": ("google", "chunkbridge.protocol_specs.gemini", True),
}

#: Later responses of one run the AI SDK keeps as files of their own: recording → the one it
#: continues. (A ``<name>.step<N>`` recording, one captured run the importer split, continues
#: ``<name>.step<N-1>``.)
LATER_RESPONSES = {
    "openai--programmatic-tool-calling.2.jsonl": "openai--programmatic-tool-calling.1.jsonl",
    "openai--programmatic-tool-calling.3.jsonl": "openai--programmatic-tool-calling.2.jsonl",
    "openai--openai-client-tool-search.2.jsonl": "openai--openai-client-tool-search.1.jsonl",
    "openai--openai-mcp-tool-approval.2.jsonl": "openai--openai-mcp-tool-approval.1.jsonl",
    "openai--openai-mcp-tool-approval.4.jsonl": "openai--openai-mcp-tool-approval.3.jsonl",
}
#: Continuations that follow the user's refusal of the approval the previous response asked for
#: (its text says so); the others follow an approval.
AFTER_A_DENIAL = frozenset({"openai--openai-mcp-tool-approval.2.jsonl"})
_STEP = re.compile(r"^(?P<run>.+)\.step(?P<n>\d+)\.jsonl$")

#: What the app answers for each built-in tool it runs (the AI SDK's output schemas).
APP_ANSWERS: dict[str, Any] = {
    "shell": {
        "output": [{"stdout": "ok", "stderr": "", "outcome": {"type": "exit", "exitCode": 0}}]
    },
    "local_shell": {"output": "ok"},
    "apply_patch": {"status": "completed", "output": "done"},
    "tool_search": {"tools": []},
}

#: Provider-run tools the AI SDK names and shapes only when the app declares them: server tool
#: name in the stream → (the name the recording's app declared it under, as the AI SDK's
#: examples that recorded them did, the factory).
_ANTHROPIC_SERVER_TOOLS = {
    "bash_code_execution": ("code_execution", "codeExecution_20250825"),
    "text_editor_code_execution": ("code_execution", "codeExecution_20250825"),
    "code_execution": ("code_execution", "codeExecution_20250825"),
    "web_fetch": ("web_fetch", "webFetch_20250910"),
    "web_search": ("web_search", "webSearch_20250305"),
    "tool_search_tool_regex": ("toolSearch", "toolSearchRegex_20251119"),
    "tool_search_tool_bm25": ("toolSearch", "toolSearchBm25_20251119"),
}


#: OpenAI's hosted tools, declared as the recordings' apps declared them: item type → (name,
#: factory, arguments).
_OPENAI_HOSTED_TOOLS = {
    "file_search_call": ("file_search", "fileSearch", {"vectorStoreIds": ["vs_recorded"]}),
    "image_generation_call": ("image_generation", "imageGeneration", {}),
}


def continues(name: str) -> str | None:
    """The recording ``name`` is a later response of: the one it continues, else ``None``."""
    if name in LATER_RESPONSES:
        return LATER_RESPONSES[name]
    step = _STEP.match(name)
    if step is None or step["n"] == "1":
        return None
    return f"{step['run']}.step{int(step['n']) - 1}.jsonl"


@dataclass
class Recording:
    """One recorded response and what the app around it declared."""

    path: Path
    #: The AI SDK provider package that reads the same API.
    provider: str
    frames: list[str] = field(default_factory=list)
    #: The tools the app runs, and the provider's own tools it declared.
    tools: list[str] = field(default_factory=list)
    provider_tools: list[dict[str, Any]] = field(default_factory=list)
    #: The provider's tools the app named otherwise: chunkbridge's ``tool_names`` setting.
    tool_names: dict[str, str] = field(default_factory=dict)
    #: The index (in the same list) of the recording this one continues, if any.
    previous: int | None = None

    @property
    def name(self) -> str:
        return self.path.name

    def sdk_case(self, history: dict[str, Any] | None) -> dict[str, Any]:
        """The AI SDK provider's case (``provider_diff.mjs``): continuing ``history``, if any."""
        case: dict[str, Any] = {"provider": self.provider, "frames": self.frames}
        case.update(tools=self.tools, providerTools=self.provider_tools)
        if history is not None:
            case["messages"] = [USER, history]
        return case


#: The question every recorded run answers.
USER = {"id": "u0", "role": "user", "parts": [{"type": "text", "text": "recorded"}]}


def recordings(dialect: str, written_too: bool = True) -> list[Recording]:
    """The dialect's recordings: the ones written from the providers' documentation
    (``fixtures/<dialect>/``; ``written_too``), then the ones recorded from the live APIs
    (``fixtures/recorded/<dialect>/``, see its ``index.json``)."""
    provider = PROVIDER_DIALECTS[dialect][0]
    written = [(path, provider) for path in sorted((FIXTURES / dialect).glob("*.jsonl"))]
    if dialect == "openai-chat" or not written_too:
        written = []  # written for the dialect's extensions, which no AI SDK provider reads
    index = json.loads((RECORDED / "index.json").read_text())["recordings"]
    recorded = [
        (RECORDED / name, entry["sdk_provider"])
        for name, entry in sorted(index.items())
        if name.startswith(f"{dialect}/")
    ]
    out = []
    for path, sdk_provider in written + recorded:
        frames = [f if isinstance(f, str) else f.decode() for f in read_frames(path)]
        tools, provider_tools, tool_names = declarations(frames)
        out.append(Recording(path, sdk_provider, frames, tools, provider_tools, tool_names))
    places = {r.path: i for i, r in enumerate(out)}
    for recording in out:
        before = continues(recording.name)
        if before is not None:
            recording.previous = places[recording.path.with_name(before)]
    for recording in out:  # the app declared its tools for the whole run
        earlier = recording.previous
        while earlier is not None:
            recording.tools = sorted({*recording.tools, *out[earlier].tools})
            recording.tool_names = {**out[earlier].tool_names, **recording.tool_names}
            for tool in out[earlier].provider_tools:
                if tool not in recording.provider_tools:
                    recording.provider_tools.append(tool)
            earlier = out[earlier].previous
    return out


def rounds(runs: list[Recording]) -> list[list[int]]:
    """The recordings' indexes in rounds: each continuation in the round after the recording it
    continues (whose final message it needs)."""
    depth: dict[int, int] = {}

    def level(i: int) -> int:
        if i not in depth:
            previous = runs[i].previous
            depth[i] = 0 if previous is None else level(previous) + 1
        return depth[i]

    for i in range(len(runs)):
        level(i)
    out: list[list[int]] = [[] for _ in range(max(depth.values(), default=-1) + 1)]
    for i, round_ in depth.items():
        out[round_].append(i)
    return out


def answered(message: dict[str, Any], approve: bool | None = True) -> dict[str, Any]:
    """The message as the app sends it back to continue: every call it must run answered (in
    each built-in tool's own output shape), every approval asked for decided (``approve``;
    ``None``: left undecided)."""
    message = copy.deepcopy(message)
    for part in message["parts"]:
        if "toolCallId" not in part:
            continue
        name = part.get("toolName") or part["type"].removeprefix("tool-")
        if part.get("state") == "approval-requested" and approve is not None:  # provider's too
            part["state"] = "approval-responded"
            part["approval"] = {**part["approval"], "approved": approve}
        elif part.get("state") == "input-available" and not part.get("providerExecuted"):
            if name == "ask_user" and "approval" in (part.get("input") or {}):
                if approve is None:
                    continue
                output: Any = "approve" if approve else "deny"  # the ai 5 question form
            else:
                output = APP_ANSWERS.get(name, {"ok": 1})
            part["state"], part["output"] = "output-available", output
    return message


def _history(runs: list[Recording], i: int, finals: dict[int, Verdict]) -> dict[str, Any] | None:
    """The message recording ``i`` continues, as the app sends it back (``None``: a new one)."""
    previous = runs[i].previous
    if previous is None:
        return None
    message = finals[previous].message
    assert message is not None, (runs[i].name, "continues a run that built no message")
    return answered(message, approve=runs[i].name not in AFTER_A_DENIAL)


def settings_of(dialect: str, recording: Recording) -> Any:
    """The dialect's settings for the recording's app: its names for the provider's tools."""
    model = get_dialect(dialect).settings
    return model(tool_names=recording.tool_names) if recording.tool_names else model()


def our_runs(
    real_clients: Any, dialect: str, runs: list[Recording], major: int
) -> tuple[dict[int, Verdict], dict[int, dict[str, Any] | None]]:
    """Every recording through chunkbridge for ``major``'s client (configured as its app named
    the provider's tools), a later response of a run as the continuation of the message the one
    before it ended with: the verdicts and the message each continued, by index."""
    verdicts: dict[int, Verdict] = {}
    histories: dict[int, dict[str, Any] | None] = {}
    for batch in rounds(runs):
        bodies = []
        for i in batch:
            histories[i] = _history(runs, i, verdicts)
            bodies.append(
                replay_frames(
                    dialect,
                    runs[i].frames,
                    target=major,
                    settings=settings_of(dialect, runs[i]),
                    continued=histories[i],
                )
            )
        checked = real_clients.check_many(
            bodies, majors=(major,), messages=[histories[i] for i in batch]
        )
        verdicts.update((i, v[major]) for i, v in zip(batch, checked, strict=True))
    return verdicts, histories


def sdk_runs(real_clients: Any, runs: list[Recording]) -> dict[int, Verdict]:
    """Every recording through the AI SDK's provider package and the ai 7 client, a later
    response of a run continuing the AI SDK's own message of the one before."""
    verdicts: dict[int, Verdict] = {}
    for batch in rounds(runs):
        histories = [_history(runs, i, verdicts) for i in batch]
        cases = [runs[i].sdk_case(h) for i, h in zip(batch, histories, strict=True)]
        bodies = real_clients.ai_sdk_provider_bodies(cases)
        checked = real_clients.check_many(bodies, majors=(7,), messages=histories)
        verdicts.update((i, v[7]) for i, v in zip(batch, checked, strict=True))
    return verdicts


def _events(frames: list[str]) -> Iterator[dict[str, Any]]:
    for frame in frames:
        try:
            event = json.loads(frame)
        except ValueError:
            continue
        if isinstance(event, dict):
            yield event


def _blocks(event: dict[str, Any]) -> list[dict[str, Any]]:
    """The content blocks (Anthropic) and output items (OpenAI) an event carries."""
    message = event.get("message") if isinstance(event.get("message"), dict) else {}
    blocks = [event.get("content_block"), event.get("item"), *(message.get("content") or [])]
    return [block for block in blocks if isinstance(block, dict)]


def result_ids(frames: list[str]) -> set[str]:
    """The calls a response carries results for, by id (Anthropic's ``*_tool_result`` blocks,
    OpenAI's result items and MCP calls made after an approval)."""
    ids: set[str] = set()
    for event in _events(frames):
        for block in _blocks(event):
            kind = str(block.get("type"))
            if kind.endswith("_tool_result") and isinstance(block.get("tool_use_id"), str):
                ids.add(block["tool_use_id"])
            elif kind.endswith("_output") and isinstance(block.get("call_id"), str):
                ids.add(block["call_id"])
            elif kind == "mcp_call" and isinstance(block.get("approval_request_id"), str):
                ids.add(block["approval_request_id"])
    return ids


def declarations(frames: list[str]) -> tuple[list[str], list[dict[str, Any]], dict[str, str]]:
    """The tools a recording's app declared: the ones it runs (to ``streamText`` without
    ``execute``, as an app's client-side tools are), the provider's own tools, declared with
    the provider's factory where the AI SDK needs it to name or place them, and the provider's
    tools it named otherwise than the provider (``tool_names``)."""
    names: set[str] = set()
    provider: dict[str, dict[str, Any]] = {}
    renamed: dict[str, str] = {}
    for event in _events(frames):
        for block in _blocks(event):
            kind, name = block.get("type"), block.get("name")
            if kind in ("tool_use", "function_call", "custom_tool_call"):
                names.add(name)
            elif kind == "server_tool_use" and name in _ANTHROPIC_SERVER_TOOLS:
                declared, factory = _ANTHROPIC_SERVER_TOOLS[name]
                provider[declared] = {"name": declared, "factory": factory}
                if declared != name and declared != "code_execution":
                    renamed[name] = declared
            elif kind == "shell_call":
                env = (block.get("environment") or {}).get("type")
                args = {"environment": {"type": "containerAuto"}} if env else {}
                provider["shell"] = {"name": "shell", "factory": "shell", "args": args}
            elif kind in _OPENAI_HOSTED_TOOLS:
                declared, factory, args = _OPENAI_HOSTED_TOOLS[kind]
                provider[declared] = {"name": declared, "factory": factory, "args": args}
            elif kind == "apply_patch_call":
                provider["apply_patch"] = {"name": "apply_patch", "factory": "applyPatch"}
            elif kind == "local_shell_call":
                provider["local_shell"] = {"name": "local_shell", "factory": "localShell"}
            elif kind == "program":
                provider["program"] = {
                    "name": "program",
                    "factory": "programmaticToolCalling",
                    "type": "programmatic_tool_calling",
                }
            elif kind == "tool_search_call":
                args = {"execution": "client"} if block.get("execution") == "client" else {}
                provider["tool_search"] = {
                    "name": "tool_search",
                    "factory": "toolSearch",
                    "args": args,
                }
        for choice in event.get("choices") or []:
            for call in (choice.get("delta") or {}).get("tool_calls") or []:
                if isinstance(call, dict) and isinstance(call.get("function"), dict):
                    names.add(call["function"].get("name"))
        for candidate in event.get("candidates") or []:
            for part in (candidate.get("content") or {}).get("parts") or []:
                if isinstance(part.get("functionCall"), dict):
                    names.add(part["functionCall"].get("name"))
                elif "executableCode" in part:
                    code = {"name": "code_execution", "factory": "codeExecution"}
                    provider["code_execution"] = code
    app = sorted(n for n in names if isinstance(n, str) and n)
    return app, list(provider.values()), renamed
