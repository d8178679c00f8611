"""Python side of the real-client oracle: runs SSE bodies through ``check.mjs`` (ai 5, 6 and 7),
and the other conformance scripts (the chat loop, the provider and agent-loop differentials, the
WebSocket transport) the same way.

Every script runs in the one long-lived ``node oracle.mjs`` of this Python process
(:mod:`tests.conformance.oracle`). Nothing here interprets the stream: verdicts come from the AI
SDK's own ``DefaultChatTransport`` and ``readUIMessageStream``.
"""

from __future__ import annotations

import asyncio
import base64
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests import components
from tests.conformance.oracle import oracle

HERE = Path(__file__).resolve().parent
#: The AI SDK's own provider packages, for the differential tests of the provider dialects.
PROVIDER_PACKAGES = ("anthropic", "openai", "google", "mcp")
MAJORS = (5, 6, 7)
#: The last ai 7 release without ``reset-step`` (7.0.70 added it), loose like the pinned 7: a
#: client the ``reset_step`` setting must not be turned on for. Checked like a major:
#: ``check(body, majors=(7, AI7_WITHOUT_RESET_STEP))``, its verdict under this key.
AI7_WITHOUT_RESET_STEP = "7.0.69"
#: A major, or a release of one that the harness also has (:data:`AI7_WITHOUT_RESET_STEP`).
Client = int | str
#: The npm aliases of those clients (tests/conformance/package.json).
_CLIENT_PACKAGES = ("ai5", "ai6", "ai7", "ai7-0-69")


class HarnessUnavailable(RuntimeError):
    """Node or the pinned ``ai`` packages are missing (``make install`` sets them up)."""


def unavailable_reason() -> str | None:
    if shutil.which("node") is None:
        return "node is not on PATH"
    for alias in _CLIENT_PACKAGES:
        if not (HERE / "node_modules" / alias / "package.json").is_file():
            return f"tests/conformance/node_modules/{alias} is missing (run make install)"
    for package in PROVIDER_PACKAGES:
        if not (HERE / "node_modules" / "@ai-sdk" / package / "package.json").is_file():
            return f"tests/conformance/node_modules/@ai-sdk/{package} is missing (run make install)"
    return None


@dataclass(frozen=True)
class Verdict:
    """What one real client did with one body."""

    ok: bool
    fatal: str | None
    error_text: str | None
    finish_reason: str | None
    message: dict[str, Any] | None
    chunks: int

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Verdict:
        fatal = raw.get("fatal")
        return cls(
            ok=raw["ok"],
            fatal=f"{fatal['name']}: {fatal['message']}" if fatal else None,
            error_text=raw.get("errorText"),
            finish_reason=raw.get("finishReason"),
            message=raw.get("message"),
            chunks=raw.get("chunks", 0),
        )

    def text(self) -> str:
        """All text parts of the final message, concatenated."""
        parts = (self.message or {}).get("parts", [])
        return "".join(p.get("text", "") for p in parts if p.get("type") == "text")

    def parts(self, part_type: str) -> list[dict[str, Any]]:
        parts = (self.message or {}).get("parts", [])
        return [p for p in parts if p.get("type") == part_type]


def run_script(name: str, payload: Any, timeout: float) -> Any:
    """Run ``name`` (``"check.mjs"``, ``"chat_loop.mjs"``, …) on ``payload`` in this process's
    oracle; its output, parsed. Raises :class:`~tests.conformance.oracle.OracleError` (a
    :class:`RuntimeError`) when the run throws, does not answer within ``timeout`` seconds, or
    the process dies; the message quotes the tail of Node's stderr. Counts as a use of the real
    AI SDK for the running test."""
    reason = unavailable_reason()
    if reason is not None:
        raise HarnessUnavailable(reason)
    components.used("ai-sdk")
    return oracle().request(name, payload, timeout)


def _client(key: str) -> Client:
    return int(key) if key.isdigit() else key


def run_cases(cases: list[dict[str, Any]], timeout: float = 300) -> list[dict[Client, Verdict]]:
    """Run ``[{"body": bytes, "majors"?: [...], "message"?: {...}}]``; one dict per case, by
    client (a major, or :data:`AI7_WITHOUT_RESET_STEP`)."""
    payload = [
        {
            "id": str(i),
            "body_b64": base64.b64encode(case["body"]).decode(),
            "majors": list(case.get("majors", MAJORS)),
            **({"message": case["message"]} if case.get("message") else {}),
        }
        for i, case in enumerate(cases)
    ]
    results = run_script("check.mjs", payload, timeout)
    return [
        {_client(major): Verdict.from_json(v) for major, v in entry["results"].items()}
        for entry in results
    ]


def _provider_runs(cases: list[dict[str, Any]], timeout: float) -> list[dict[str, Any]]:
    payload = [{"id": str(i), **case} for i, case in enumerate(cases)]
    results: list[dict[str, Any]] = run_script("provider_diff.mjs", payload, timeout)
    failed = [r for r in results if r.get("error")]
    if failed:
        raise RuntimeError(f"the AI SDK could not run case {failed[0]['id']}: {failed[0]['error']}")
    return results


def ai_sdk_provider_bodies(cases: list[dict[str, Any]], timeout: float = 300) -> list[bytes]:
    """What a Node route on the AI SDK sends for each recorded provider stream: ``[{provider,
    frames, tools}]`` through ``provider_diff.mjs`` (the provider package + ``streamText`` +
    ``toUIMessageStreamResponse``); one UI message stream body per case."""
    return [base64.b64decode(r["body_b64"]) for r in _provider_runs(cases, timeout)]


def ai_sdk_provider_requests(cases: list[dict[str, Any]], timeout: float = 300) -> list[Any]:
    """The request body the AI SDK's provider sends for a ``UIMessage`` history: ``[{provider,
    frames, tools, providerTools, messages, providerOptions?}]`` through ``provider_diff.mjs``
    (``convertToModelMessages`` + the provider package); one parsed JSON body per case."""
    return [r["request"] for r in _provider_runs(cases, timeout)]


def chat_loop(
    api: str,
    major: int,
    text: str,
    answers: list[dict[str, Any]],
    auto: bool = False,
    timeout: float = 90,
    apis: list[str] | None = None,
    stop_after_chars: int | None = None,
) -> dict[str, Any]:
    """The real chat of ``major`` (``AbstractChat`` + ``DefaultChatTransport``) against a live
    gateway: send ``text``, answer what the assistant asks (``answers``), let it continue;
    ``{messages, status, error, requests}``. ``apis``: the n-th request goes to the n-th of
    them, round robin (several instances behind a load balancer). ``stop_after_chars``: the
    user presses Stop once the answer shows that many characters."""
    payload: dict[str, Any] = {"api": api, "major": major, "text": text, "answers": answers}
    payload.update(auto=auto, apis=apis, stopAfterChars=stop_after_chars)
    result: dict[str, Any] = run_script("chat_loop.mjs", payload, timeout)
    return result


def busy_chat(payload: dict[str, Any], timeout: float = 90) -> dict[str, Any]:
    """A user who sends while the answer streams, with the real chat of ``payload["major"]``
    (``busy_chat.mjs``: see it for the payload); ``{messages, status, error, requests,
    bodies, errors}`` — ``bodies`` each response's bytes as the chat read them (base64)."""
    result: dict[str, Any] = run_script("busy_chat.mjs", payload, timeout)
    result["bodies"] = [base64.b64decode(b) for b in result["bodies"]]
    return result


class RealClients:
    """The pytest fixture's object: ``check(body)`` → ``{5: Verdict, 6: ..., 7: ...}``."""

    def check(
        self,
        body: bytes,
        majors: tuple[Client, ...] = MAJORS,
        message: dict[str, Any] | None = None,
    ) -> dict[Client, Verdict]:
        return run_cases([{"body": body, "majors": majors, "message": message}])[0]

    def check_many(
        self,
        bodies: list[bytes],
        majors: tuple[Client, ...] = MAJORS,
        messages: list[dict[str, Any] | None] | None = None,
    ) -> list[dict[Client, Verdict]]:
        """Each body through the clients; ``messages``: the assistant message each continues
        (``None`` for a new one), if any does."""
        continued = messages or [None] * len(bodies)
        return run_cases(
            [
                {"body": b, "majors": majors, "message": m}
                for b, m in zip(bodies, continued, strict=True)
            ]
        )

    def ai_sdk_provider_bodies(self, cases: list[dict[str, Any]]) -> list[bytes]:
        return ai_sdk_provider_bodies(cases)

    def ai_sdk_provider_requests(self, cases: list[dict[str, Any]]) -> list[Any]:
        return ai_sdk_provider_requests(cases)

    async def chat_loop(
        self,
        api: str,
        major: int,
        text: str,
        answers: list[dict[str, Any]],
        auto: bool = False,
        apis: list[str] | None = None,
        stop_after_chars: int | None = None,
    ) -> dict[str, Any]:
        """:func:`chat_loop` off the event loop (the gateway under test runs on it)."""
        return await asyncio.to_thread(
            chat_loop, api, major, text, answers, auto, 90, apis, stop_after_chars
        )

    async def busy_chat(self, **payload: Any) -> dict[str, Any]:
        """:func:`busy_chat` off the event loop."""
        return await asyncio.to_thread(busy_chat, payload)
