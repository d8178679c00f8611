"""The gateway's tool servers as configured: ``[tools.<server>]`` tables of the TOML file.

Tools come only from here, never from a request. A server is reached over Streamable HTTP
(``url`` and ``headers``) or started as a subprocess speaking stdio (``command``, ``args`` and
the only environment it gets, ``env``). ``allow`` and ``deny`` pick its tools by name (shell-style
patterns); ``approval`` says which calls wait for the user: ``unless-read-only`` (the default)
lets a tool the server annotates ``readOnlyHint`` run at once — annotations are the server's
hints, so ``tool_approval`` overrides them per tool. ``replay`` says whether a call cut off by
its instance's death may be run again by the instance that takes the turn over: ``auto`` (the
default) trusts the tool's ``readOnlyHint`` or ``idempotentHint``; ``tool_replay`` overrides it
per tool, as ``tool_approval`` does ``approval``. A server that goes down is started or connected
again (:mod:`~chunkbridge.gateway.tools.supervisor`); an HTTP server is probed every
``probe_interval`` seconds. ``roots`` are the directories (``file://`` URIs) the server is told
it may work in, when it asks (MCP ``roots/list``); the configuration is read once, at start-up,
so they never change while the gateway runs.
"""

from __future__ import annotations

from enum import StrEnum
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["ApprovalPolicy", "ReplayPolicy", "ToolMode", "ToolServerSettings"]


class ApprovalPolicy(StrEnum):
    NEVER = "never"
    ALWAYS = "always"
    UNLESS_READ_ONLY = "unless-read-only"


class ReplayPolicy(StrEnum):
    """Whether a call interrupted by its instance's death may run again when another instance
    takes the turn over: the server may have done the work already, and whether doing it twice
    is harmless is for the server to say (its annotations) or the operator (this policy)."""

    #: Safe when the server annotates the tool ``readOnlyHint`` or ``idempotentHint``.
    AUTO = "auto"
    #: Always run again (the operator knows the tool does no harm twice).
    SAFE = "safe"
    #: Never run again, whatever the annotations say (the tool must not do its work twice).
    NEVER = "never"


class ToolMode(StrEnum):
    #: Every tool is a tool of the model, its JSON Schema passed through.
    DIRECT = "direct"
    #: Four meta-tools (list, search, schema, call) stand for all of the server's tools.
    META = "meta"


class ToolServerSettings(BaseModel):
    """One MCP server (see the module)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str | None = Field(None, description="Streamable HTTP endpoint (http or https)")
    headers: dict[str, str] = Field(default_factory=dict, repr=False, description="HTTP headers")
    command: str | None = Field(None, description="stdio: the program to start")
    args: list[str] = Field(default_factory=list, description="stdio: its arguments")
    env: dict[str, str] = Field(
        default_factory=dict, repr=False, description="stdio: the environment it gets (only)"
    )
    cwd: str | None = Field(None, description="stdio: its working directory")
    mode: ToolMode = Field(ToolMode.DIRECT, description="direct or meta")
    allow: list[str] | None = Field(None, description="tool names (patterns) to use; all if unset")
    deny: list[str] = Field(default_factory=list, description="tool names (patterns) never used")
    approval: ApprovalPolicy = Field(ApprovalPolicy.UNLESS_READ_ONLY)
    tool_approval: dict[str, ApprovalPolicy] = Field(
        default_factory=dict, description="per tool name: overrides approval"
    )
    replay: ReplayPolicy = Field(
        ReplayPolicy.AUTO,
        description="whether a call interrupted by its instance's death may run again when "
        "another instance takes the turn over: auto (if readOnlyHint or idempotentHint), safe, "
        "never",
    )
    tool_replay: dict[str, ReplayPolicy] = Field(
        default_factory=dict, description="per tool name: overrides replay"
    )
    connect_timeout: float = Field(
        10.0, gt=0, description="seconds to connect and list tools (or to answer a probe)"
    )
    probe_interval: float = Field(
        15.0, gt=0, description="http: seconds between the liveness probes of a connected server"
    )
    tool_timeout: float = Field(60.0, gt=0, description="seconds one call may take")
    elicitation_timeout: float = Field(
        600.0,
        gt=0,
        description="seconds a call that asked the user mid-call (before MCP 2026-07-28) waits "
        "for the answer; then the server is told the user declined",
    )
    max_output_bytes: int = Field(100_000, gt=0, description="a longer tool output is cut")
    max_media_bytes: int = Field(
        5_000_000,
        ge=0,
        description="images and audio of one call's result, base64 bytes at most (past it: a note)",
    )
    progress: bool = Field(
        True, description="the server's progress notifications shown as preliminary outputs"
    )
    sampling: bool = Field(
        False,
        description="answer the server's sampling/createMessage with the gateway's model "
        "(it spends your tokens: off by default, and not declared to the server then)",
    )
    sampling_model: str | None = Field(None, description="sampling: the model (else the dialect's)")
    sampling_max_tokens: int = Field(
        1024, gt=0, description="sampling: tokens of one answer at most"
    )
    sampling_per_call: int = Field(
        5, gt=0, description="sampling: requests at most per running call of the server"
    )
    roots: list[str] | None = Field(
        None,
        description="file:// URIs the server is told it may work in (MCP roots); unset: the "
        "roots capability is not declared",
    )

    @model_validator(mode="after")
    def _one_transport(self) -> ToolServerSettings:
        if (self.url is None) == (self.command is None):
            raise ValueError("a tool server has either url (Streamable HTTP) or command (stdio)")
        if self.url is not None and urlsplit(self.url).scheme not in ("http", "https"):
            raise ValueError(f"tool server url must be http(s): {self.url!r}")
        for root in self.roots or ():
            if urlsplit(root).scheme != "file":
                raise ValueError(f"a root is a file:// URI: {root!r}")
        return self
