"""Copy the provider streams the AI SDK's repository recorded from the live APIs into
``fixtures/recorded/``: the held-out set of tests/test_provider_differential.py.

The AI SDK (github.com/vercel/ai, Apache-2.0) keeps, per provider package,
``__fixtures__/*.chunks.txt`` files (Cerebras: ``fixtures/``): one SSE ``data:`` payload per line,
captured from Anthropic, OpenAI (Responses and chat completions), Azure, xAI, LM Studio, GitHub
Copilot, DeepSeek, Groq, Mistral, Alibaba, Perplexity, Moonshot, Cerebras and Gemini. That is
chunkbridge's recording format already;
this script only sorts them by the API they speak, names them ``<package>--<name>.jsonl`` and
writes ``index.json`` with their origin and the AI SDK provider package that reads the same API
(the other side of the test). A file that holds several responses one after the other (a multi-step
run captured into one file) becomes one recording per response, ``<name>.step<N>.jsonl``, as each
was its own HTTP body; the AI SDK's tests of a stream with a second ``message_start`` keep theirs.

    python tests/conformance/import_recorded_streams.py GIT_DIR [COMMIT]

``GIT_DIR``: a clone of vercel/ai (a bare one will do); ``COMMIT`` defaults to ``HEAD``. Run it
again to refresh the set; the files it does not know are left alone.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[2] / "fixtures" / "recorded"

#: Packages whose fixtures are streams of an API chunkbridge reads, by path prefix.
PACKAGES = (
    "packages/anthropic/src/",
    "packages/openai/src/responses/",
    "packages/openai/src/chat/",
    "packages/azure/src/",
    "packages/xai/src/",
    "packages/open-responses/src/responses/",
    "packages/openai-compatible/src/chat/",
    "packages/deepseek/src/chat/",
    "packages/groq/src/",
    "packages/mistral/src/",
    "packages/alibaba/src/",
    "packages/perplexity/src/",
    "packages/moonshotai/src/",
    "packages/cerebras/src/",
    "packages/google/src/__fixtures__/",
)


def _git(git_dir: str, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", git_dir, *args], check=True, capture_output=True, text=True
    ).stdout


#: The first event of a response, per API (where a captured file holds several).
_RESPONSE_STARTS = ('"type":"response.created"', '"type":"message_start"')


def _completion_id(line: str) -> object:
    """A chat completion chunk's ``id`` (every chunk of one response repeats it), else None."""
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event.get("id") if isinstance(event, dict) and "choices" in event else None


def _responses(lines: list[str], name: str) -> list[list[str]]:
    """The file's responses, one list of lines each."""
    if "message-start" in name:  # the AI SDK's tests of exactly that malformed stream
        return [lines]
    if lines and _completion_id(lines[0]) is not None:
        # chat completions: another id starts the next response (Azure's prompt-filter chunk
        # before the first one has an empty id)
        out: list[list[str]] = []
        current: object = None
        for line in lines:
            chunk_id = _completion_id(line)
            if not out or (chunk_id and current and chunk_id != current):
                out.append([])
            current = chunk_id or current
            out[-1].append(line)
        return out
    out = []
    for line in lines:
        compact = line.replace(" ", "")
        if not out or (compact.startswith("{") and any(s in compact for s in _RESPONSE_STARTS)):
            if out and not any(s in "".join(out[-1]).replace(" ", "") for s in _RESPONSE_STARTS):
                out[-1].append(line)
                continue
            out.append([])
        out[-1].append(line)
    return out


def _dialect(first: dict[str, object]) -> str | None:
    """The dialect whose wire format the stream's first event is."""
    if first.get("type") in ("response.created", "response.in_progress"):
        return "openai-responses"
    if first.get("type") == "message_start":
        return "anthropic-messages"
    if "candidates" in first:
        return "gemini"
    if "choices" in first:
        return "openai-chat"
    return None


def _sdk_provider(dialect: str, package: str) -> str:
    """The AI SDK provider package that reads the same API: ``@ai-sdk/openai`` for OpenAI's
    own chat completions, ``@ai-sdk/openai-compatible`` for every other server's."""
    if dialect == "openai-chat":
        return "openai-chat" if package == "openai" else "openai-compatible"
    return {"openai-responses": "openai", "anthropic-messages": "anthropic", "gemini": "google"}[
        dialect
    ]


def main(git_dir: str, commit: str = "HEAD") -> None:
    commit = _git(git_dir, "rev-parse", commit).strip()
    paths = _git(git_dir, "ls-tree", "-r", "--name-only", commit).splitlines()
    index: dict[str, dict[str, str]] = {}
    for path in sorted(paths):
        if not path.endswith(".chunks.txt") or not (
            "/__fixtures__/" in path or "/fixtures/" in path
        ):
            continue
        if not path.startswith(PACKAGES) or "/interactions/" in path:
            continue
        text = _git(git_dir, "show", f"{commit}:{path}")
        lines = [line for line in text.split("\n") if line.strip()]
        try:
            first = json.loads(lines[0])
        except (IndexError, ValueError):
            continue
        dialect = _dialect(first) if isinstance(first, dict) else None
        if dialect is None:
            continue
        package = path.split("/")[1]
        name = path.rsplit("/", 1)[1].removesuffix(".chunks.txt")
        responses = _responses(lines, name)
        for step, response in enumerate(responses, 1):
            suffix = f".step{step}" if len(responses) > 1 else ""
            file = f"{dialect}/{package}--{name}{suffix}.jsonl"
            (OUT / dialect).mkdir(parents=True, exist_ok=True)
            (OUT / file).write_text("\n".join(response) + "\n", encoding="utf-8")
            index[file] = {"source": path, "sdk_provider": _sdk_provider(dialect, package)}
            print(f"{file}  ({len(response)} events)")
    manifest = {
        "origin": "https://github.com/vercel/ai",
        "license": "Apache-2.0, Copyright 2023 Vercel, Inc.",
        "commit": commit,
        "recordings": index,
    }
    (OUT / "index.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    print(f"{len(index)} recordings from vercel/ai@{commit[:12]}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
