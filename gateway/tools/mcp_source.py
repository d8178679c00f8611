"""One MCP server as a tool source, through the official ``mcp`` SDK's client: Streamable HTTP
(``url``, ``headers``; its connections are :mod:`~chunkbridge.gateway.tools.http_transport`'s)
or a subprocess over stdio (``command``; it gets the environment
configured for it over the SDK's few safe basics — ``PATH``, ``HOME``, ``USER`` and the like —
never the gateway's own).

The connection is opened at start-up and kept by a task of its own, which enters and leaves the
SDK's context (as its cancel scopes require), notices when the server goes down and connects
again (:mod:`~chunkbridge.gateway.tools.supervisor`). A server that says its tools changed is
listed again, then ``on_change`` is called: on the 2026-07-28 protocol the change comes on a
``subscriptions/listen`` stream kept open for it, before that as a
``notifications/tools/list_changed``.

A call that needs the user's input (MCP 2026-07-28: an ``InputRequiredResult`` with a form
elicitation) ends with the question (:class:`~chunkbridge.gateway.tools.catalog.ToolQuestion`);
the call made again with the answer (:class:`~chunkbridge.gateway.tools.catalog.ToolAnswer`)
carries it and the server's state — nothing waits in this process meanwhile. A server of an
older protocol asks in the middle of a call (``elicitation/create``): the call is parked with
its question until the answer comes (:mod:`~chunkbridge.gateway.tools.mid_call`), handed over
to it when another instance takes the answer (:mod:`~chunkbridge.gateway.tools.relayed`).

A call may carry an idempotency key (``_meta`` :data:`IDEMPOTENCY_KEY_META` of its
``tools/call``): the caller gives the same key when it runs the same call again — another
instance taking over a turn whose instance died — so a server that keeps the keys it has seen
can do the work once. The key is only carried here; what makes it the same is the caller's.

A call is bounded by the server's ``tool_timeout``; a call that is cancelled — a stop, a
timeout — is abandoned with the protocol's ``notifications/cancelled``, which the SDK sends, so
the server stops its work too. Every failure is a
:class:`~chunkbridge.gateway.tools.catalog.ToolOutcome` with an error for the model, never an
exception for the turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Callable
from typing import Any

from chunkbridge.gateway.logging import get_logger
from chunkbridge.gateway.tool_settings import ToolServerSettings
from chunkbridge.gateway.tools.catalog import (
    Progress,
    RemoteTool,
    ToolAnswer,
    ToolOutcome,
    ToolQuestion,
)
from chunkbridge.gateway.tools.mcp_results import outcome_of
from chunkbridge.gateway.tools.mcp_sampling import Complete, SampleReport, SamplingGate
from chunkbridge.gateway.tools.mid_call import KEY_PREFIX, AskingCalls, elicit_result
from chunkbridge.gateway.tools.relayed import answer_elsewhere
from chunkbridge.gateway.tools.supervisor import Supervisor, describe, watched

__all__ = ["IDEMPOTENCY_KEY_META", "McpToolSource", "ToolSourceUnavailable"]

#: The ``_meta`` key of a ``tools/call`` request that carries the call's idempotency key (a
#: name of the gateway's own, in the reverse-DNS form MCP asks of ``_meta`` keys).
IDEMPOTENCY_KEY_META = "io.chunkbridge/idempotency-key"

#: Pages of ``tools/list`` read at most (a server that never stops paging is cut off).
MAX_PAGES = 100
#: Pauses before a call is made again when the server answered only with its state (MCP
#: 2026-07-28: an ``InputRequiredResult`` that asks nothing), as the SDK's own client waits.
STATE_ONLY_PAUSES = (0.05, 0.1, 0.2, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25)
#: Seconds before a dropped ``subscriptions/listen`` stream is opened again.
LISTEN_RETRY = 5.0


class ToolSourceUnavailable(Exception):
    """A tool server could not be reached or listed at start-up (the message says which)."""


class McpToolSource:
    """One configured MCP server (see the module)."""

    def __init__(
        self,
        name: str,
        settings: ToolServerSettings,
        tls: ssl.SSLContext | None = None,
        model: Complete | None = None,
    ) -> None:
        self.name = name
        self.settings = settings
        #: ``sampling = true``: the server's sampling requests, answered by ``model``.
        self.sampling = (
            SamplingGate(name, settings, model) if settings.sampling and model is not None else None
        )
        #: For https servers: the context with the gateway's client certificate (mTLS), if any.
        self.tls = tls
        self.tools: list[RemoteTool] = []
        #: Called after the tool list was read again (the server said it changed).
        self.on_change: Callable[[McpToolSource], None] = lambda source: None
        self.log = get_logger("chunkbridge.tools")
        #: Calls that ask the user in their middle (before MCP 2026-07-28), parked meanwhile.
        self.asking = AskingCalls(name, settings.elicitation_timeout)
        #: Keeps the connection, and says whether the server is up.
        self.health = Supervisor(self)
        #: Set when the current connection is found ended (see :meth:`_ended`).
        self.lost = asyncio.Event()
        self.lost_reason: str | None = None
        self._client: Any = None
        self._stack = contextlib.AsyncExitStack()
        self._relisting: asyncio.Task[None] | None = None
        self._listening: asyncio.Task[None] | None = None

    def _new_client(self, stack: contextlib.AsyncExitStack) -> Any:
        try:
            from mcp import Client
        except ImportError as exc:
            raise ImportError(
                "the tools need the mcp package: pip install 'chunkbridge[mcp]'"
            ) from exc
        from mcp.client.stdio import StdioServerParameters

        settings = self.settings
        # the elicitation callback also says the gateway can ask (MCP 2026-07-28 servers
        # check it before they ask through an InputRequiredResult)
        hooks: dict[str, Any] = {
            "message_handler": self._message,
            "elicitation_callback": self._elicited,
        }
        if settings.roots is not None:  # the callback is what declares the capability
            hooks["list_roots_callback"] = self._roots
        if self.sampling is not None:  # (likewise)
            hooks["sampling_callback"] = self.sampling.answer
        if settings.command is not None:
            from mcp.client.stdio import stdio_client

            parameters = StdioServerParameters(
                command=settings.command,
                args=list(settings.args),
                env=dict(settings.env),
                cwd=settings.cwd,
            )
            return Client(watched(stdio_client(parameters), self._ended), **hooks)
        assert settings.url is not None
        from mcp.client.streamable_http import streamable_http_client

        from chunkbridge.gateway.tools.http_transport import mcp_http_client

        http = mcp_http_client(settings.headers or None, self.tls)
        stack.push_async_callback(http.aclose)
        transport = streamable_http_client(settings.url, http_client=http)
        return Client(watched(transport, self._ended), **hooks)

    def _ended(self) -> None:
        """The server's messages ended: for stdio, its process exited."""
        if not self.lost.is_set():
            self.lost_reason = (
                "the server's process exited"
                if self.settings.command is not None
                else "the server's connection closed"
            )
            self.lost.set()

    async def _elicited(self, context: Any, params: Any) -> Any:
        return await self.asking.elicit(params)

    async def _roots(self, context: Any) -> Any:
        """``roots/list``: the configured ``roots``."""
        from mcp.types import ListRootsResult, Root

        roots = [Root(uri=uri) for uri in self.settings.roots or ()]
        return ListRootsResult(roots=roots)

    async def _message(self, message: Any) -> None:
        """The server's notifications: a changed tool list is read again (in a task of its
        own: the SDK waits for this handler before it reads the next message)."""
        from mcp.types import ToolListChangedNotification

        notification = getattr(message, "root", message)
        if isinstance(notification, ToolListChangedNotification) and self._client is not None:
            if self._relisting is None or self._relisting.done():
                self._relisting = asyncio.get_running_loop().create_task(self._relist())

    async def _listen(self) -> None:
        """Keep a ``subscriptions/listen`` stream of tool list changes open (2026-07-28)."""
        from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost

        while self._client is not None:
            try:
                async with self._client.listen(tools_list_changed=True) as changes:
                    async for _ in changes:
                        await self._relist()
                await asyncio.sleep(LISTEN_RETRY)  # the server ended it: not at once again
            except ListenNotSupportedError:
                return  # an older protocol: the change comes as a notification
            except SubscriptionLost as exc:  # dropped: listen again, and read the list anew
                if self.lost.is_set():
                    return  # the server is down: the supervisor connects again
                self.log.warning("tools.listen_lost", server=self.name, error=repr(exc))
                await asyncio.sleep(LISTEN_RETRY)
                await self._relist()
            except Exception as exc:  # refused: said once, not retried forever
                self.log.warning("tools.listen_refused", server=self.name, error=repr(exc))
                return

    async def _relist(self) -> None:
        client = self._client
        if client is None:
            return
        try:
            async with asyncio.timeout(self.settings.connect_timeout):
                self.tools = await self._list(client)
        except Exception as exc:  # the old list stays; the next change tries again
            self.log.warning(
                "tools.relist_failed", server=self.name, error=f"{type(exc).__name__}: {exc}"
            )
            return
        self.on_change(self)

    async def start(self) -> None:
        """Connect and read the tool list; :class:`ToolSourceUnavailable` when that fails."""
        where = self.settings.url or self.settings.command
        try:
            await self.health.start()
        except Exception as exc:
            raise ToolSourceUnavailable(
                f"tool server {self.name!r} ({where}): {type(exc).__name__}: {exc}"
            ) from exc

    @property
    def up(self) -> bool:
        return self.health.up

    async def open(self) -> None:
        """Connect and read the tool list (in the supervising task, which closes it too)."""
        self.lost = asyncio.Event()
        self.lost_reason = None
        stack = contextlib.AsyncExitStack()
        try:
            async with asyncio.timeout(self.settings.connect_timeout):
                client = await stack.enter_async_context(self._new_client(stack))
                tools = await self._list(client)
        except BaseException:
            with contextlib.suppress(Exception):
                await stack.aclose()
            raise
        self._client, self._stack, self.tools = client, stack, tools
        capabilities = client.server_capabilities
        listed = getattr(capabilities, "tools", None)
        if listed is not None and getattr(listed, "list_changed", False):
            self._listening = asyncio.get_running_loop().create_task(self._listen())

    async def probe(self) -> None:
        """A request the server must answer (``tools/list``, past the SDK's cache)."""
        await self._client.session.list_tools()

    async def _list(self, client: Any) -> list[RemoteTool]:
        tools: list[RemoteTool] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = await client.list_tools(cursor=cursor)
            for tool in page.tools:
                annotations = tool.annotations
                read_only = bool(annotations and annotations.read_only_hint)
                idempotent = bool(annotations and annotations.idempotent_hint)
                schema = dict(tool.input_schema or {"type": "object"})
                description = tool.description or ""
                tools.append(RemoteTool(tool.name, description, schema, read_only, idempotent))
            cursor = page.next_cursor
            if cursor is None:
                break
        return tools

    def sampling_budget(
        self, report: SampleReport | None = None
    ) -> contextlib.AbstractContextManager[None]:
        """Held while a call of the server runs: what it may sample grows with the calls, and
        ``report`` hears of what it sampled."""
        if self.sampling is None:
            return contextlib.nullcontext()
        return self.sampling.running(report)

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        progress: Progress | None = None,
        answer: ToolAnswer | None = None,
        idempotency_key: str | None = None,
    ) -> ToolOutcome:
        """Run ``tool`` (its server's own name) with ``arguments`` — again with the user's
        ``answer`` to the question it asked, or on with it (a parked call); the server's
        progress notifications for it go to ``progress`` (unless the server's ``progress`` is
        off). ``idempotency_key``, if given, is in the ``_meta`` of every ``tools/call`` the
        call sends (see the module)."""
        settings = self.settings
        if (
            answer is not None
            and answer.key.startswith(KEY_PREFIX)
            and not self.asking.parked(answer)
        ):
            told = progress if settings.progress else None
            relay = self.asking.relay
            return await answer_elsewhere(relay, self.name, settings, tool, answer, told)
        client = self._client
        if client is None:
            reason = self.health.reason or "not connected"
            return ToolOutcome(
                error=f"{tool} failed: the tool server {self.name!r} is down "
                f"({reason}); it is being started again"
            )
        told = _progress_callback(progress) if progress and settings.progress else None
        meta = {IDEMPOTENCY_KEY_META: idempotency_key} if idempotency_key is not None else None
        lost = self.lost
        try:
            run = _call_tool(client, tool, arguments, told, answer, meta)
            result = await self.asking.call(run, answer, settings.tool_timeout)
        except TimeoutError:
            return ToolOutcome(error=f"{tool} took longer than {settings.tool_timeout:g} s")
        except Exception as exc:  # the server's or the connection's failure, for the model
            if lost.is_set() or self._client is not client:
                reason = self.lost_reason or describe(exc)
                return ToolOutcome(
                    error=f"{tool} failed: the tool server {self.name!r} went "
                    f"down during the call ({reason})"
                )
            return ToolOutcome(error=f"{tool} failed: {type(exc).__name__}: {exc}")
        if isinstance(result, ToolQuestion):
            return ToolOutcome(asks=result)
        return outcome_of(tool, result, settings)

    async def close(self, failed: bool = False) -> str | None:
        """Close the connection (in the task that opened it); what its transport failed with,
        if it did. ``failed``: the SDK's transport failed and cancelled its scopes, in which
        nothing can be awaited until they are left, so the connection closes first."""
        self._client = None
        tasks = [t for t in (self._relisting, self._listening) if t is not None]
        self._relisting = self._listening = None
        for task in tasks:
            task.cancel()
        if tasks and not failed:  # they end before the connection they use does
            await asyncio.wait(tasks, timeout=1.0)
        stack, self._stack = self._stack, contextlib.AsyncExitStack()
        failure: str | None = None
        try:
            await stack.aclose()
        except Exception as exc:
            failure = describe(exc)
        if tasks and failed:
            await asyncio.wait(tasks, timeout=1.0)
        return failure

    async def aclose(self) -> None:
        await self.health.stop()


async def _call_tool(
    client: Any,
    tool: str,
    arguments: dict[str, Any],
    told: Any,
    answer: ToolAnswer | None,
    meta: dict[str, Any] | None,
) -> Any:
    """The SDK's ``tools/call``; a 2026-07-28 server's answer is made again with the user's
    answer, and again while the server sends only its state, as the SDK's own client waits.
    Each request carries ``meta`` (the SDK adds its own keys, a progress token, to it)."""
    from mcp.types import InputRequiredResult

    responses: dict[str, Any] | None = None
    state: str | None = None
    if answer is not None:
        responses, state = {answer.key: elicit_result(answer)}, answer.state
    for pause in (0.0, *STATE_ONLY_PAUSES):
        if pause:
            await asyncio.sleep(pause)
        result = await client.session.call_tool(
            tool,
            arguments,
            progress_callback=told,
            allow_input_required=True,
            input_responses=responses,
            request_state=state,
            meta=meta,
        )
        if not isinstance(result, InputRequiredResult) or result.input_requests:
            break
        responses, state = None, result.request_state  # not done: only its state
    return result


def _progress_callback(tell: Progress) -> Any:
    """The SDK's progress callback (``progress, total, message``; numbers as floats) as one
    small object, whole numbers kept whole."""

    async def progress(done: float, total: float | None, message: str | None) -> None:
        report: dict[str, Any] = {"progress": _number(done)}
        if total is not None:
            report["total"] = _number(total)
        if message:
            report["message"] = message
        tell(report)

    return progress


def _number(value: float) -> float | int:
    return int(value) if value.is_integer() else value
