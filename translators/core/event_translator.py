"""What the stream core needs of a dialect's translator: the shape every translator has (the
kit's :class:`~chunkbridge.kit.Translator`, a :class:`~chunkbridge.translators.core.steps.
StepJoin`, a test's own), and what it returns."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Protocol

from chunkbridge.translators.core.closing import CloseRequest, DeferredClose

__all__ = ["Chunk", "EventTranslator", "Item"]

Chunk = dict[str, Any]
#: What a translator returns: chunks, the last of which may be a request to end the turn (now,
#: or when the agent turns out to wait for the user).
Item = Chunk | CloseRequest | DeferredClose


class EventTranslator(Protocol):
    """What the pipeline needs from a dialect's translator (``chunkbridge.kit.Translator``)."""

    #: Raw frames that end the upstream stream normally (OpenAI's ``[DONE]``).
    TERMINAL_FRAMES: ClassVar[frozenset[str]]

    @property
    def stats(self) -> Mapping[str, int]:
        """Counts by kind (``unknown-event:<type>``, ``malformed-event``…), for the log line."""

    @property
    def text_id(self) -> str | None:
        """The open text part that :meth:`fast_text_delta` streams into, if any."""

    def feed(self, event: Any) -> Sequence[Item]: ...

    def fast_text_delta(self, event: dict[str, Any]) -> str | None: ...

    def end_of_stream(self, terminal: bool) -> Sequence[Item]: ...

    def malformed(self, why: str, raw: Any) -> Sequence[Item]: ...
