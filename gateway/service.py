"""The gateway of one app: its configuration, dialect, connector, stores and metrics, the turns
it runs, and the opening of a turn (which the HTTP POST and the WebSocket ``send`` share)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Literal

from pydantic import ValidationError

from chunkbridge.gateway.config import ConfigError, GatewayConfig, HistoryMode
from chunkbridge.gateway.logging import get_logger
from chunkbridge.gateway.metrics import Metrics
from chunkbridge.gateway.registry import UnknownDialect, get_dialect, registry
from chunkbridge.gateway.stores import StoreUnavailable, open_stores
from chunkbridge.gateway.stores.base import Line
from chunkbridge.gateway.stores.redis_resume import RedisResumeStore
from chunkbridge.gateway.stores.writer import StoreWriter
from chunkbridge.gateway.telemetry import NO_TRACE, NoTrace, Telemetry, TurnTrace
from chunkbridge.gateway.telemetry_sdk import install_sdk
from chunkbridge.gateway.tools import ToolSources
from chunkbridge.gateway.transports.connectors import Connector, connector_for
from chunkbridge.gateway.transports.tls import client_tls
from chunkbridge.gateway.turn import busy, steering
from chunkbridge.gateway.turn.agent_setup import AgentSetup, agent_setup
from chunkbridge.gateway.turn.busy import Queued
from chunkbridge.gateway.turn.checkpointer import DurableServices, FaultPlan
from chunkbridge.gateway.turn.driver import DriverSettings
from chunkbridge.gateway.turn.durable import DurableDriver
from chunkbridge.gateway.turn.opening import admit, assemble, connect, delivered
from chunkbridge.gateway.turn.run import OpenTurns, RunServices, Seat, TurnRun
from chunkbridge.gateway.turn.sampling import Sampled, Sampler
from chunkbridge.gateway.turn.takeover import Recoverer
from chunkbridge.kit import (
    Dialect,
    Frame,
    RequestRejected,
    Translator,
    TranslatorOptions,
    TurnInput,
    UnknownEventPolicy,
    WebSocketContract,
)
from chunkbridge.protocol_specs.chat_request import ChatRequest

__all__ = ["NO_UPSTREAM", "NOT_STARTED", "Gateway", "require_dialect"]


#: What a request to a gateway whose :meth:`Gateway.lifespan` is not running is answered (503).
NOT_STARTED = (
    "This chunkbridge gateway is not started: run `async with gateway.lifespan():` in the "
    "app's lifespan (FastAPI(lifespan=...)); Starlette does not run a mounted app's lifespan, "
    "so its stores, tool servers and telemetry would stay off."
)


def _no_turns(turn: TurnInput) -> Frame:
    raise RequestRejected(
        "This gateway has no upstream: its chats are streamed by the app (UIStreamResponse)."
    )


#: The dialect of a gateway configured without one: a gateway lent to an app's own streams
#: (their resume log, transcripts, telemetry, stored-chat routes), which runs no turn itself.
NO_UPSTREAM = Dialect(
    name="no-upstream",
    summary="no upstream: the app streams its chats itself",
    translator=Translator,
    websocket=WebSocketContract(prompt_frame=_no_turns),
)


def require_dialect(config: GatewayConfig) -> None:
    """A gateway served on its own (``serve``) needs a dialect: :class:`ConfigError` saying
    which exist when it has none."""
    if config.dialect is None:
        names = ", ".join(registry().dialects) or "none registered"
        raise ConfigError(f"no dialect: set one with --dialect NAME (available: {names})")


class Gateway:
    """One app's gateway: its upstream dialect, stores, tool servers, telemetry and metrics,
    and the turns it runs. Served by :func:`chunkbridge.create_app`, or lent to an app's own
    streams (:class:`chunkbridge.UIStreamResponse`); either way it runs inside
    :meth:`lifespan`. The stores are opened once; :meth:`configure` may change the rest (the
    demo points it at its own upstream once that listens)."""

    def __init__(self, config: GatewayConfig) -> None:
        #: :meth:`lifespan` is running: the stores are open and the tools listed.
        self.started = False
        self._lifespans = 0
        self.metrics = Metrics()
        self.turns = OpenTurns()
        self.draining = False
        self.log = get_logger("chunkbridge.gateway")
        self.stores = open_stores(
            config, self.log, on_skipped=self.metrics.transcript_rows_skipped.inc
        )
        stores = self.stores
        #: The sessions' lines (``busy``) and answers: every instance's with ``resume =
        #: redis``, else this process's (its turn count).
        self.line: Line = stores.line if stores.line is not None else self.turns.lines
        #: The store's writes, behind the turns (``store`` on): transcripts, checkpoints.
        self.store_writer = (
            None
            if stores.transcripts is None
            else StoreWriter(
                stores.transcripts, self.metrics, self.log, checkpoints=stores.checkpoints
            )
        )
        self._retention: asyncio.Task[None] | None = None
        #: The MCP servers whose tools the gateway runs (``[tools.<server>]``).
        self.tools = (
            ToolSources(config.tools, client_tls(config), self.metrics, self)
            if config.tools
            else None
        )
        #: The agent loop, once the tools are listed (:meth:`start`).
        self.agent: AgentSetup | None = None
        #: ``durable = true``: what durable turns share, and what takes over those of
        #: instances that died (:meth:`start`).
        self.durable: DurableServices | None = None
        self._recoverer: Recoverer | None = None
        if stores.checkpoints is not None and stores.takeovers is not None:
            assert isinstance(stores.resume, RedisResumeStore) and self.store_writer is not None
            self.durable = DurableServices(
                stores.checkpoints,
                self.store_writer,
                stores.takeovers,
                stores.resume,
                config.max_recoveries,
                FaultPlan.from_environment(),
            )
        #: Signs the approvals of gateway tools when no ``approval_secret`` is set (an approved
        #: call runs with the input the model gave, never one a request altered).
        self._own_secret = secrets.token_hex(32)
        self.configure(config)

    def configure(self, config: GatewayConfig) -> None:
        """Use ``config`` for the next turns. Raises :class:`ConfigError` when the dialect is
        unknown, its settings are invalid, or it does not speak the upstream URL's transport.
        Without a dialect the gateway has no upstream (:data:`NO_UPSTREAM`): it serves an
        app's own streams, and refuses turns of its own."""
        if config.dialect is None and config.tools:
            raise ConfigError(
                "tools need a dialect: the model of the gateway's upstream calls them"
            )
        try:
            dialect = NO_UPSTREAM if config.dialect is None else get_dialect(config.dialect)
        except UnknownDialect as exc:
            raise ConfigError(str(exc)) from exc
        raw = config.dialect_settings.get(dialect.name, {})
        try:
            settings = dialect.settings.model_validate(raw)
        except ValidationError as exc:
            raise ConfigError(f"invalid settings for dialect {dialect.name}: {exc}") from exc
        self.config = config
        self.dialect: Dialect = dialect
        self._offer_tools(settings)
        #: ``telemetry`` on: the tracer and GenAI histograms (the SDK is the process's).
        self.telemetry = (
            None
            if config.telemetry == "off"
            else Telemetry(dialect.name, dialect.genai_provider, getattr(settings, "model", None))
        )
        #: What the upstream gets of the conversation: the deployment's choice, or the dialect's.
        #: ``history = stored``: the conversation comes from the transcript store.
        self.stored_history = config.history is HistoryMode.STORED
        #: What the upstream gets of the conversation: the deployment's choice (a stored
        #: history is sent whole), or the dialect's.
        self.history: Literal["latest", "full"] = (
            dialect.history
            if config.history is None
            else "latest"
            if config.history is HistoryMode.LATEST
            else "full"
        )
        self.connector: Connector = connector_for(dialect, config)
        #: What every turn's run shares.
        self.run_services = RunServices(self.stores.approvals, self.metrics, config.on_disconnect)
        self.driver_settings = DriverSettings(
            first_event_timeout=config.first_event_timeout,
            idle_timeout=config.idle_timeout,
            total_timeout=config.total_timeout,
            keepalive_interval=config.keepalive_interval,
            flush_interval=config.flush_interval,
            question_settle=config.question_settle,
        )

    def _offer_tools(self, settings: Any) -> None:
        """The dialect's settings with the gateway's tools among the model's (and the loop
        that runs them), for the next turns: at start-up and when a server's tools change."""
        config = self.config
        self.agent = None
        if self.tools is not None and self.tools.catalog:
            self.agent = agent_setup(
                self.dialect.name, settings, self.tools, config.max_steps, config.tool_concurrency
            )
        self._app_settings = settings
        self.dialect_settings = settings if self.agent is None else self.agent.settings
        #: The same for every turn (one object, not one per turn).
        self.translator_options = TranslatorOptions(
            unknown_events=UnknownEventPolicy(config.unknown_events),
            dynamic_tools=config.dynamic_tools,
            settings=self.dialect_settings,
        )

    def _tools_changed(self) -> None:
        try:
            self._offer_tools(self._app_settings)
        except ConfigError as exc:  # e.g. a new tool named like one of the app's: keep the old
            self.log.error("tools.change_refused", error=str(exc))

    @contextlib.asynccontextmanager
    async def lifespan(
        self,
        *,
        on_startup: Callable[[Gateway], Awaitable[None]] | None = None,
        on_shutdown: Callable[[], Awaitable[None]] | None = None,
    ) -> AsyncIterator[None]:
        """The gateway's life inside an app's: opens its stores, starts its tool servers and
        (``telemetry = otlp``) the OpenTelemetry SDK; on the way out drains its turns (each
        ends validly) and closes them all. ``FastAPI(lifespan=lambda app: gateway.lifespan())``,
        or ``async with gateway.lifespan(): ...`` inside the app's own lifespan. Until it runs,
        the gateway's routes answer 503 (:data:`NOT_STARTED`). Entered again while it runs (a
        second app serving the same gateway), it does nothing. The hooks run inside the SDK's
        life: ``on_startup`` before the stores open, ``on_shutdown`` after they closed."""
        self._lifespans += 1
        try:
            if self._lifespans > 1:
                yield
                return
            stop_sdk = install_sdk() if self.config.telemetry != "off" else None
            try:
                if on_startup is not None:
                    await on_startup(self)
                await self.start()  # resume = redis: fails the start-up when Redis is not there
                self.started = True
                try:
                    yield
                finally:
                    self.started = False
                    await self.aclose()
                    if on_shutdown is not None:
                        await on_shutdown()
            finally:
                if stop_sdk is not None:
                    stop_sdk()
        finally:
            self._lifespans -= 1

    async def start(self) -> None:
        """Open the stores and start the tool servers (and what needs them): what
        :meth:`lifespan` does on entering, for a caller that runs the gateway itself. A tool
        server out of reach fails it, naming the server."""
        await self.stores.start()
        if self.stores.transcripts is not None:
            self._retention = asyncio.create_task(self._forget_old_chats())
        if self.tools is not None:  # a server out of reach fails the start-up, with its name
            await self.tools.start()
            if self.stores.relay is not None:  # an answer another instance takes reaches here
                self.tools.use_relay(self.stores.relay)
            self.configure(self.config)  # the model is offered the tools listed
            self.tools.on_change = self._tools_changed
            self.log.info(
                "tools.ready", servers=len(self.tools.sources), tools=len(self.tools.catalog)
            )
            if self.durable is not None:  # (the loop's turns are the durable ones)
                self._recoverer = Recoverer(self, self.durable)
                self._recoverer.start()
            if self.agent is not None and self.agent.asks and not self.config.approval_secret:
                self.log.warning(
                    "tools.approvals_signed_per_process",
                    hint="set approval_secret when several instances serve one app",
                )

    @property
    def steerable(self) -> bool:
        """A new message can steer the running turns (``busy = steer``): loop turns, and an
        agent backend's that takes steers on its socket (:mod:`~chunkbridge.gateway.turn.
        steering`)."""
        return self.agent is not None or steering.takes_steers(self)

    def steer_offer(
        self, request: ChatRequest, session_id: str, run_id: str, request_id: str = ""
    ) -> str:
        """What a message waiting under ``busy = steer`` gives the running turn of an agent
        backend that takes steers itself (its frame, its answer's run id, its message:
        :func:`~chunkbridge.gateway.turn.steering.offer`); ``""`` for every other gateway."""
        return steering.offer(self, request, session_id, run_id, request_id)

    @property
    def approval_secret(self) -> str | None:
        """What approvals are signed with: ``approval_secret``; with gateway tools that ask,
        a key of this process when none is set."""
        if self.config.approval_secret or self.agent is None or not self.agent.asks:
            return self.config.approval_secret
        return self._own_secret

    @property
    def question_secret(self) -> str:
        """What the questions of gateway tools are signed with: ``approval_secret``, or a key
        of this process."""
        return self.config.approval_secret or self._own_secret

    async def complete(
        self, messages: list[dict[str, Any]], system: str, max_tokens: int, model: str | None
    ) -> Sampled:
        """A tool server's sampling request, answered by this gateway's model (``sampling``)."""
        sampler = Sampler(
            self.dialect,
            self.connector,
            self._app_settings,
            self.translator_options,
            self.driver_settings,
        )
        return await sampler.complete(messages, system, max_tokens, model)

    async def aclose(self) -> None:
        """Drain the open turns (each ends validly; up to ``drain_timeout``), write what they
        left to write, then close."""
        await self.drain(self.config.drain_timeout)
        if self.durable is not None and self.durable.ending:  # turns' ends being recorded
            await asyncio.wait(list(self.durable.ending), timeout=self.config.drain_timeout)
        if self.store_writer is not None:
            await self.store_writer.drain(self.config.drain_timeout)
        if self._retention is not None:
            self._retention.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._retention
        await self.connector.aclose()
        if self.tools is not None:
            await self.tools.aclose()
        await self.stores.aclose()

    async def _forget_old_chats(self, every: float = 3600.0) -> None:
        """``store_ttl``: at start-up, then hourly, forget the chats nobody wrote to since."""
        store = self.stores.transcripts
        assert store is not None
        while True:
            try:
                forgotten = await store.purge(time.time() - self.config.store_ttl)
            except StoreUnavailable as exc:
                self.log.warning("transcript.purge_failed", error=str(exc))
            else:
                if forgotten:
                    self.log.info("transcript.purged", chats=forgotten)
            await asyncio.sleep(every)

    async def drain(self, grace: float) -> None:
        """Take no new turns and give the open ones up to ``grace`` seconds to end (each
        validly); durable turns are handed over to another instance. :meth:`aclose` drains
        with ``drain_timeout`` before it closes."""
        self.draining = True
        recoverer, self._recoverer = self._recoverer, None
        if recoverer is not None:  # a stopping instance takes nothing over (it hands over)
            await recoverer.stop()
        await self.turns.drain(grace)
        left = [r for r in self.turns.runs if isinstance(r.driver, DurableDriver)]
        for run in left:  # durable turns not at a checkpoint yet: left now, from their last
            await run.driver.leave_now()  # type: ignore[attr-defined]
        if left:
            await self.turns.drain(1.0)

    async def line_up(
        self,
        chat_request: ChatRequest,
        session_id: str,
        *,
        steerable: bool | None = None,
        may_wait: bool = True,
        request_id: str = "",
    ) -> Seat | Queued | None:
        """Before a turn opens: the stale guard (``expectedTurnId``), then, under a ``busy``
        policy other than ``reject``, a new user message's place in its session's line — a
        seat (it runs now), :class:`Queued` (it waits), or ``None`` (today's path). Raises
        (409) before anything is streamed. ``steerable``, ``may_wait``: as
        :func:`~chunkbridge.gateway.turn.busy.line_up` takes them (an app's own stream)."""
        await busy.check_stale(self, chat_request, session_id)
        return await busy.line_up(
            self,
            chat_request,
            session_id,
            steerable=steerable,
            may_wait=may_wait,
            request_id=request_id,
        )

    async def open_queued(
        self,
        queued: Queued,
        seat: Seat,
        chat_request: ChatRequest,
        forward: dict[str, str],
        request_id: str,
        started: float,
        log: Any,
    ) -> TurnRun:
        """The turn of a request that waited (:meth:`line_up`) and now holds ``seat``: the
        answer it waited for taken from the server (see :mod:`~chunkbridge.gateway.turn.busy`),
        then :meth:`open_turn`."""
        try:
            chat_request = await busy.with_previous_answer(self, chat_request, queued)
        except BaseException:
            await seat.free()
            raise
        return await self.open_turn(
            chat_request, queued.key[0], forward, request_id, started, log, seat, queued.run_id
        )

    async def open_turn(
        self,
        chat_request: ChatRequest,
        session_id: str,
        forward: dict[str, str],
        request_id: str,
        started: float,
        log: Any,
        seat: Seat | None = None,
        run_id: str | None = None,
    ) -> TurnRun:
        """Start one turn upstream (:mod:`chunkbridge.gateway.turn.opening`: admit, connect,
        assemble). Raises before anything is streamed (the caller answers the error); the
        :class:`TurnRun` it returns owns the turn from here. ``seat``: the session's turn the
        request holds already (its line admitted it), ``run_id`` its answer's id."""
        trace = self._trace(session_id, request_id)
        try:
            admission = await admit(self, chat_request, session_id, trace, seat, run_id)
        except BaseException as exc:
            trace.failed(exc)
            raise
        try:
            upstream = await connect(self, admission, forward, trace)
        except BaseException as exc:
            trace.failed(exc)
            await admission.let_go(self)
            raise
        delivered(self, admission, trace)
        run = assemble(
            self,
            admission,
            upstream,
            forward,
            request_id=request_id,
            log=log,
            started=started,
            trace=trace,
        )
        if self.config.busy == "steer" and steering.takes_steers(self):
            new_trace = functools.partial(self._trace, session_id, request_id)
            steering.watch(self, run, admission.request, forward, new_trace)
        return run

    def _trace(self, session_id: str, request_id: str) -> TurnTrace | NoTrace:
        if self.telemetry is None:
            return NO_TRACE
        return self.telemetry.turn(session_id, request_id)
