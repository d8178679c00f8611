"""OpenTelemetry traces and metrics of the gateway, in the GenAI semantic conventions' names.

One trace per conversation turn, joined to what is around it: the browser's ``traceparent``
(taken by the ASGI server span, :mod:`chunkbridge.gateway.http.app`), the backend's own spans
(the context goes upstream in the request headers and the WebSocket handshake, and in MCP's
``_meta``, which the ``mcp`` SDK fills from the current span), and the resume reads of the turn
(linked to it, from any instance). Under the server span of the request:

* ``chunkbridge.turn`` — one per turn: dialect, session, chat and message ids, how it closed,
  the chunk and event counts, the guard's repairs; stops and approval decisions as events;
* ``chat {model}`` (a model provider) or ``invoke_agent {dialect}`` (an agent backend) — a
  CLIENT span per upstream call, with the ``gen_ai.*`` attributes: provider, request and
  response model, token usage, finish reasons;
* ``execute_tool {tool}`` — each call of a tool the gateway runs (its MCP request below it).

Never a span per chunk, and never message contents. With ``telemetry = off`` a turn's trace is
:data:`NO_TRACE`, whose methods do nothing, and no OpenTelemetry call is made at all. The SDK
(exporters, sampler, resource) is the process's: :mod:`chunkbridge.gateway.telemetry_sdk` sets
one up from the standard ``OTEL_*`` variables when nothing else did.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from opentelemetry import metrics, propagate, trace
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode

__all__ = [
    "NO_TRACE",
    "TRACE_COMMENT",
    "NoTrace",
    "Telemetry",
    "TurnTrace",
    "span_link",
    "trace_comment",
]

#: The SSE comment that opens a traced turn's resume log: its ``traceparent``, so that a resume
#: read on any instance links to the turn (a client ignores comments; a reader drops it).
TRACE_COMMENT = b": traceparent "


def trace_comment(trace: TurnTrace | NoTrace) -> bytes:
    """What a traced turn's chunk log starts with: the link a resume read's span makes."""
    return TRACE_COMMENT + trace.traceparent.encode() + b"\n\n" if trace.traceparent else b""


#: Close reasons that are failures of the turn (its span's status is ERROR).
_FAILED = frozenset(
    {"upstream-error", "upstream-closed", "upstream-protocol-error", "timeout", "internal-error"}
)

#: The turn's report values set on its span even when they are zero (the others: only when not).
_KEPT = frozenset({"close_reason", "finish_reason", "upstream_events", "chunks"})

#: Bucket boundaries the GenAI conventions advise (tokens; seconds).
_TOKEN_BUCKETS = [4**n for n in range(14)]
_SECOND_BUCKETS = [0.01 * 2**n for n in range(14)]


class Telemetry:
    """The gateway's tracer and GenAI histograms (besides the Prometheus metrics, not instead).

    ``provider``: the ``gen_ai.provider.name`` of a model-provider dialect; ``None`` for an
    agent backend (its upstream calls are ``invoke_agent`` spans)."""

    def __init__(self, dialect: str, provider: str | None, request_model: str | None) -> None:
        self.dialect = dialect
        self.provider = provider
        self.request_model = request_model or None
        self.tracer = trace.get_tracer("chunkbridge")
        meter = metrics.get_meter("chunkbridge")
        self.token_usage = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Tokens used by an upstream model call (input and output)",
            explicit_bucket_boundaries_advisory=_TOKEN_BUCKETS,
        )
        self.operation_duration = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="An upstream call, from the request to its stream's end",
            explicit_bucket_boundaries_advisory=_SECOND_BUCKETS,
        )
        self.first_event = meter.create_histogram(
            "gen_ai.client.operation.time_to_first_chunk",
            unit="s",
            description="The turn's request to the first event from upstream",
            explicit_bucket_boundaries_advisory=_SECOND_BUCKETS,
        )
        self.first_ui_chunk = meter.create_histogram(
            "gen_ai.server.time_to_first_token",
            unit="s",
            description="The turn's request to the first UI message chunk written to the client",
            explicit_bucket_boundaries_advisory=_SECOND_BUCKETS,
        )

    @property
    def operation(self) -> str:
        return "invoke_agent" if self.provider is None else "chat"

    def base_attributes(self) -> dict[str, Any]:
        """The GenAI attributes every upstream call and metric of this gateway carries."""
        attributes: dict[str, Any] = {"gen_ai.operation.name": self.operation}
        if self.provider is not None:
            attributes["gen_ai.provider.name"] = self.provider
        else:
            attributes["gen_ai.agent.name"] = self.dialect
        if self.request_model is not None:
            attributes["gen_ai.request.model"] = self.request_model
        return attributes

    def turn(self, session_id: str, request_id: str) -> TurnTrace:
        """The trace of a turn being opened (a child of the request's span)."""
        span = self.tracer.start_span(
            "chunkbridge.turn",
            attributes={
                "chunkbridge.dialect": self.dialect,
                "session.id": session_id,
                "chunkbridge.request_id": request_id,
            },
        )
        return TurnTrace(self, span)

    def resume_read(self, session_id: str, chat_id: str, turn: str | None) -> Span:
        """The span of a resume read, linked to the turn it reads (``turn``: its traceparent,
        as the turn's log stored it), wherever that runs."""
        link = span_link(turn)
        return self.tracer.start_span(
            "chunkbridge.resume",
            attributes={"session.id": session_id, "gen_ai.conversation.id": chat_id},
            links=[link] if link is not None else None,
        )


def span_link(traceparent: str | None) -> Link | None:
    """A link to the span a W3C ``traceparent`` names (``None`` when it names none)."""
    if not traceparent:
        return None
    context = propagate.extract({"traceparent": traceparent})
    span_context = trace.get_current_span(context).get_span_context()
    return Link(span_context) if span_context.is_valid else None


class TurnTrace:
    """One turn's spans: the turn's own, its current upstream call's, its tools'. Each method is
    called a few times per turn at most (never per chunk)."""

    def __init__(self, telemetry: Telemetry, span: Span) -> None:
        self.telemetry = telemetry
        self.span = span
        self._context = trace.set_span_in_context(span)
        self._call: Span | None = None
        self._call_started = 0.0
        self._attributes = telemetry.base_attributes()

    @property
    def traceparent(self) -> str | None:
        """The turn span's ``traceparent`` (what a resume read links to)."""
        carrier: dict[str, str] = {}
        propagate.inject(carrier, context=self._context)
        return carrier.get("traceparent")

    def opened(self, chat_id: str | None, message_id: str) -> None:
        if chat_id:
            self.span.set_attribute("gen_ai.conversation.id", chat_id)
        self.span.set_attribute("chunkbridge.message_id", message_id)

    def event(self, name: str, attributes: Mapping[str, Any] | None = None) -> None:
        """A decision on the turn (a stop, an approval): an event of its span."""
        self.span.add_event(name, attributes)

    # -- upstream calls ----------------------------------------------------------------------

    def upstream_call(self, headers: dict[str, str]) -> dict[str, str]:
        """A new upstream call begins (the previous one, if any, has ended): its CLIENT span,
        and ``headers`` with the trace context that joins the backend's spans to it."""
        telemetry = self.telemetry
        model = telemetry.request_model
        name = telemetry.operation + " " + (model or telemetry.dialect)
        self._call = span = telemetry.tracer.start_span(
            name, context=self._context, kind=SpanKind.CLIENT, attributes=self._attributes
        )
        self._call_started = time.monotonic()
        carrier = dict(headers)
        propagate.inject(carrier, context=trace.set_span_in_context(span))
        return carrier

    def upstream_ended(self, metadata: Mapping[str, Any] | None, finish: str | None) -> None:
        """The current upstream call's stream ended (``metadata``: the answer's message
        metadata — the model the upstream named, its usage)."""
        span, self._call = self._call, None
        if span is None:
            return
        telemetry = self.telemetry
        attributes = dict(self._attributes)
        metadata = metadata or {}
        model = metadata.get("model")
        if isinstance(model, str) and model:
            attributes["gen_ai.response.model"] = model
        if finish:
            attributes["gen_ai.response.finish_reasons"] = [finish]
        usage = metadata.get("usage")
        tokens: dict[str, int] = {}
        if isinstance(usage, dict):
            for ours, theirs in (("inputTokens", "input"), ("outputTokens", "output")):
                value = usage.get(ours)
                if type(value) is int:
                    tokens[theirs] = value
                    attributes[f"gen_ai.usage.{theirs}_tokens"] = value
        if finish == "error":
            attributes["error.type"] = "upstream_error"
            span.set_status(Status(StatusCode.ERROR))
        span.set_attributes(attributes)
        span.end()
        measured = {k: v for k, v in attributes.items() if not k.startswith("gen_ai.usage.")}
        measured.pop("gen_ai.response.finish_reasons", None)
        telemetry.operation_duration.record(time.monotonic() - self._call_started, measured)
        for kind, count in tokens.items():
            telemetry.token_usage.record(count, {**measured, "gen_ai.token.type": kind})

    # -- tools ---------------------------------------------------------------------------------

    @contextmanager
    def tool(self, name: str, call_id: str) -> Iterator[Span]:
        """The current span while the gateway runs a tool call (the MCP request the ``mcp``
        SDK sends in it carries its context in ``_meta``)."""
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.type": "extension",
        }
        with self.telemetry.tracer.start_as_current_span(
            f"execute_tool {name}", context=self._context, attributes=attributes
        ) as span:
            yield span

    def sampled(
        self, tool: Span | None, model: str, usage: Mapping[str, Any] | None, seconds: float
    ) -> None:
        """A tool's server sampled the model (MCP sampling): a ``chat`` span of its own, under
        the tool's, ``seconds`` long, with its usage."""
        attributes = {**self._attributes, "gen_ai.request.model": model}
        for ours, theirs in (("inputTokens", "input"), ("outputTokens", "output")):
            value = (usage or {}).get(ours)
            if type(value) is int:
                attributes[f"gen_ai.usage.{theirs}_tokens"] = value
        context = trace.set_span_in_context(tool) if tool is not None else self._context
        end = time.time_ns()
        span = self.telemetry.tracer.start_span(
            f"{self.telemetry.operation} {model}",
            context=context,
            kind=SpanKind.CLIENT,
            attributes=attributes,
            start_time=end - int(seconds * 1e9),
        )
        span.end(end_time=end)

    # -- the end -------------------------------------------------------------------------------

    def end(
        self,
        report: Mapping[str, Any],
        first_event: float | None,
        first_write: float | None,
        error: str | None,
    ) -> None:
        """The turn is over: its counts and outcome on its span; the time-to-first metrics
        (seconds from the request, when there was a first)."""
        if self._call is not None:  # ended by a stop, a timeout, the client going away
            self.upstream_ended(None, None)
        span = self.span
        reason = report.get("close_reason")
        # counts of what went wrong (and a flag) only when there was something: every attribute
        # is paid for twice, when set and when exported, on every turn
        span.set_attributes({f"chunkbridge.{k}": v for k, v in report.items() if v or k in _KEPT})
        if reason in _FAILED:
            span.set_attribute("error.type", str(reason))
            span.set_status(Status(StatusCode.ERROR, error[:200] if error else None))
        span.end()
        attributes = self._attributes
        if first_event is not None:
            self.telemetry.first_event.record(first_event, attributes)
        if first_write is not None:
            self.telemetry.first_ui_chunk.record(first_write, attributes)

    def failed(self, exc: BaseException) -> None:
        """The turn was refused before it streamed (the request's HTTP error says why)."""
        if self._call is not None:
            self._call.set_status(Status(StatusCode.ERROR))
            self._call.end()
            self._call = None
        self.span.set_attribute("error.type", type(exc).__name__)
        self.span.set_status(Status(StatusCode.ERROR, str(exc)[:200]))
        self.span.end()


class NoTrace:
    """The trace of a turn when telemetry is off: every method does nothing."""

    traceparent = None

    def opened(self, chat_id: str | None, message_id: str) -> None:
        pass

    def event(self, name: str, attributes: Mapping[str, Any] | None = None) -> None:
        pass

    def upstream_call(self, headers: dict[str, str]) -> dict[str, str]:
        return headers

    def upstream_ended(self, metadata: Mapping[str, Any] | None, finish: str | None) -> None:
        pass

    def tool(self, name: str, call_id: str) -> AbstractContextManager[None]:
        return _NO_SPAN

    def sampled(
        self, tool: Any, model: str, usage: Mapping[str, Any] | None, seconds: float
    ) -> None:
        pass

    def end(
        self,
        report: Mapping[str, Any],
        first_event: float | None,
        first_write: float | None,
        error: str | None,
    ) -> None:
        pass

    def failed(self, exc: BaseException) -> None:
        pass


_NO_SPAN = nullcontext(None)
NO_TRACE = NoTrace()
