"""The agent loop of a gateway with tools: what is set up once — the model's tools, which calls
the gateway runs and which wait for approval — and, per turn, the parts its driver needs.

The gateway's tools are offered to the model beside the app's own (the dialect's ``tools``
setting): the catalog's definitions (or, for servers in meta mode, the four meta-tools) are
added to the dialect's settings, so every provider dialect's request builder sends them as it
sends the app's. A name on both sides is a configuration error (the model could not tell which
one it calls). Only model-provider dialects get tools: an agent backend runs its own.

Each next model call is built by the dialect from the conversation the client sent, with the
assistant message so far (the turn's one assembler: what the client builds) as its last message
— the same request a client continuing the message would cause, so the loop needs nothing of a
dialect beyond what a continuation needs. It is the model's history, not the app's view: the
questions gateway calls asked (``protocol_specs/elicitation.py``) are left out (they are the
tools', not the model's), and the calls split out of a ``tools_call`` batch are the one batch
call again (``kit.provider.model_calls``).
"""

from __future__ import annotations

import dataclasses
import hmac
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from chunkbridge.gateway.config import ConfigError
from chunkbridge.gateway.errors import BadRequest
from chunkbridge.gateway.telemetry import NO_TRACE, NoTrace, TurnTrace
from chunkbridge.gateway.tools import ToolAnswer, ToolSources
from chunkbridge.gateway.transports.base import Upstream
from chunkbridge.gateway.transports.connectors import Connector
from chunkbridge.gateway.turn.agent import LoopParts
from chunkbridge.kit import AnsweredCall, ApprovalAnswer, ProviderSettings, TurnInput
from chunkbridge.protocol_specs import meta_tools
from chunkbridge.protocol_specs.chat_request import ChatRequest, ToolPart, UIMessage
from chunkbridge.protocol_specs.elicitation import (
    elicitation_response,
    elicitation_signature,
    is_elicitation_question,
)
from chunkbridge.protocol_specs.human_in_the_loop import QUESTION_TOOL
from chunkbridge.translators.core.agent_loop import AgentLoop, Ids, ToolPolicy
from chunkbridge.translators.core.event_translator import EventTranslator
from chunkbridge.translators.core.steps import ReadyCall

__all__ = ["AgentSetup", "agent_setup", "random_ids"]


def random_ids(kind: str) -> str:
    """``<kind>-<16 hex digits>``: ids of a loop turn's approvals and questions, unique among a
    chat's turns without coordination between instances."""
    return f"{kind}-{uuid.uuid4().hex[:16]}"


@dataclass(frozen=True, slots=True)
class AgentSetup:
    #: The dialect's settings with the gateway's tools among the model's.
    settings: Any
    policy: ToolPolicy
    tools: ToolSources
    max_steps: int
    concurrency: int
    #: The gateway's tool names (every loop turn's ``TurnOptions.gateway_tools``).
    names: frozenset[str]
    #: Some gateway tool waits for the app's approval.
    asks: bool

    def released_calls(
        self, answers: Sequence[ApprovalAnswer], answered: Sequence[AnsweredCall], secret: str
    ) -> list[ReadyCall] | None:
        """The calls of gateway tools a continuation releases, to run first: the approved
        ones, and those made again with the answer to their question (whose signature must
        verify: :class:`BadRequest` otherwise); ``None`` when it answered none of them."""
        ours = [a for a in answers if a.tool_name in self.policy.gateway]
        questions = [a for a in answered if is_elicitation_question(a.tool_name, a.input)]
        if not ours and not questions:
            return None
        calls = [ReadyCall(a.tool_call_id, a.tool_name, a.input) for a in ours if a.approved]
        return calls + [self._answered(question, secret) for question in questions]

    def _answered(self, question: AnsweredCall, secret: str) -> ReadyCall:
        """The call a question's answer lets go on: the question must be the one the gateway
        signed (:class:`BadRequest` otherwise)."""
        form = question.input
        elicitation = form["elicitation"]
        key, state = elicitation.get("key"), elicitation.get("requestState")
        call_id, name = elicitation.get("toolCallId"), elicitation.get("toolName")
        signature = elicitation.get("signature")
        expected = elicitation_signature(secret, question.tool_call_id, form)
        genuine = isinstance(signature, str) and hmac.compare_digest(signature, expected)
        if not genuine or not all(isinstance(v, str) for v in (key, call_id, name)):
            raise BadRequest("This answer is to a question the gateway did not ask.")
        schema = form.get("schema")
        action, content = elicitation_response(
            question.output, question.is_error, schema if isinstance(schema, dict) else {}
        )
        answer = ToolAnswer(key, action, content, state if isinstance(state, str) else None)
        return ReadyCall(call_id, name, elicitation.get("arguments"), answer=answer)

    @staticmethod
    def model_view(request: ChatRequest) -> ChatRequest:
        """``request`` without the questions gateway calls asked (see the module)."""
        if not any(_asks(part) for message in request.messages for part in message.parts):
            return request
        messages = [_without_questions(message) for message in request.messages]
        return request.model_copy(update={"messages": messages})

    def parts(
        self,
        turn_input: TurnInput,
        connector: Connector,
        forward: dict[str, str],
        translator: Callable[[], EventTranslator],
        released: list[ReadyCall] | None,
        question_secret: str,
        trace: TurnTrace | NoTrace = NO_TRACE,
        ids: Ids = random_ids,
    ) -> LoopParts:
        """What the driver of one loop turn needs (see the module for the next requests)."""
        request = turn_input.request
        earlier = request.messages[:-1] if request.continued_message() else request.messages

        async def open_step(message: dict[str, Any]) -> Upstream:
            messages = [*earlier, _without_questions(UIMessage.model_validate(message))]
            step_request = request.model_copy(update={"messages": messages})
            step_input = dataclasses.replace(turn_input, request=step_request)
            return await connector.open(step_input, trace.upstream_call(forward))

        return LoopParts(
            loop=AgentLoop(
                self.policy,
                self.max_steps,
                ids=ids,
                question_secret=question_secret,
                resumed=released is not None,
            ),
            tools=self.tools,
            open_step=open_step,
            translator=translator,
            released=released,
            concurrency=self.concurrency,
            trace=trace,
            replays=self.tools.replay_safe,
            run_id=turn_input.run_id,
        )


def _asks(part: Any) -> bool:
    return isinstance(part, ToolPart) and is_elicitation_question(part.tool_name, part.input)


def _without_questions(message: UIMessage) -> UIMessage:
    """The message without the tools' questions, nor the steps they leave empty."""
    kept = [part for part in message.parts if not _asks(part)]
    if len(kept) == len(message.parts):
        return message
    parts = [
        part
        for i, part in enumerate(kept)
        if part.type != "step-start" or (i + 1 < len(kept) and kept[i + 1].type != "step-start")
    ]
    return message.model_copy(update={"parts": parts})


def agent_setup(
    dialect: str, settings: Any, tools: ToolSources, max_steps: int, concurrency: int
) -> AgentSetup:
    """The loop of ``dialect`` with ``settings``, offering ``tools``' catalog. Raises
    :class:`ConfigError` for a dialect that is no model provider and for clashing names."""
    if not isinstance(settings, ProviderSettings):
        raise ConfigError(
            f"tools: the {dialect} dialect talks to an agent that runs its own tools; the "
            "gateway runs tools in front of a model provider (anthropic-messages, "
            "openai-responses, openai-chat, gemini)"
        )
    names = tools.names()
    taken = sorted(meta_tools.NAMES & set(tools.catalog)) if tools.meta else []
    if taken:
        raise ConfigError(
            f"tools: {', '.join(taken)} is the name of a meta-tool and of a server's tool; "
            "deny it on the server"
        )
    clash = sorted(set(names) & set(settings.tools))
    if clash:
        raise ConfigError(
            f"tools: {', '.join(clash)} is both a tool of the app ([{dialect}] tools) and of "
            "a tool server; deny it on the server or rename the app's"
        )
    app = {name for name, d in settings.tools.items() if "type" not in d} | {QUESTION_TOOL}
    policy = ToolPolicy(names, frozenset(app))
    merged = settings.model_copy(update={"tools": {**settings.tools, **tools.definitions()}})
    gateway = policy.gateway
    return AgentSetup(
        merged,
        policy,
        tools,
        max_steps,
        concurrency,
        names=frozenset(gateway),
        asks=any(gateway.values()),
    )
