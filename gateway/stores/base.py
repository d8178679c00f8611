"""The store families' protocols: what the turn code relies on, whichever backend serves it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from chunkbridge.gateway.stores.line import Entry, Waiter

if TYPE_CHECKING:
    from chunkbridge.gateway.stores.transcript_sql import Cursor, Database
    from chunkbridge.translators.core.approvals import IssuedApproval

__all__ = [
    "ANSWERED",
    "ApprovalLedger",
    "CheckpointStore",
    "Claimed",
    "ChunkSink",
    "Claim",
    "Forget",
    "Interruptible",
    "Key",
    "Line",
    "ResumeLog",
    "ResumeStore",
    "Save",
    "ChatPage",
    "ChatSummary",
    "MessageStatus",
    "Put",
    "StoredMessage",
    "Stoppable",
    "StoreUnavailable",
    "Transcript",
    "TranscriptStore",
    "TurnWrite",
]

#: A response's key: (session id, chat id).
Key = tuple[str, str]

#: What an answered approval's ledger entry becomes (kept until it expires, to tell a replay
#: from a forgery).
ANSWERED = "answered"


class ChunkSink(Protocol):
    """Where a resumable turn's bodies also go, exactly as the client got them."""

    def append(self, body: bytes) -> None: ...


class ResumeLog(ChunkSink, Protocol):
    """One response's chunk log, as its producer sees it."""

    def finish(self) -> None:
        """The response ended: readers get its end; the log stays readable for the store's
        ``ttl``. Never waits (a backend that writes elsewhere does so in the background)."""

    def leave(self) -> None:
        """This instance writes no more of the log, which another one goes on with (a durable
        turn taken over, or handed over): not its end."""

    async def settled(self) -> bool:
        """Whether the log holds what was appended — ``False``: it refused it, another
        instance holds the turn. Only a durable turn's log waits for its store to say so."""


class Stoppable(Protocol):
    """A running turn as a resume store holds it: something a stop request can end."""

    def stop(self) -> bool:
        """End the turn as a client abort would; ``False`` when it had already ended."""

    def lost(self) -> None:
        """Another instance took the turn over (a durable turn whose lease this instance let
        lapse): it ends here without another word — to its log, its record or its upstream."""


@runtime_checkable
class Interruptible(Protocol):
    """A running turn that a new user message can interrupt (``busy = interrupt``)."""

    def interrupt(self, by: str) -> bool:
        """End the turn as a stop would, its ``finish`` saying it was interrupted by the user
        message ``by``; ``False`` when it had already ended (or was stopping)."""


class ResumeStore(Protocol):
    """Chunk logs of running and recently finished responses, stops, and the per-session turn
    rule across instances."""

    def begin(self, key: Key, turn: Stoppable) -> ResumeLog:
        """A new response for ``key`` (it replaces a finished one's log)."""

    async def reader(self, key: Key) -> AsyncIterator[bytes] | None:
        """The response of ``key`` from its first body, following it live; ``None`` when there
        is none."""

    async def stop(self, key: Key) -> bool:
        """Stop the turn of ``key`` wherever it runs; whether one was running."""

    async def interrupt(self, session_id: str, by: str) -> None:
        """Interrupt every turn of the session wherever it runs (:class:`Interruptible`)."""

    async def acquire_turn(self, session_id: str, limit: int) -> str:
        """Hold one of the session's ``limit`` turns across instances; the member to release.
        Raises :class:`~chunkbridge.gateway.errors.TurnInProgress` when none is free."""

    async def release_turn(self, session_id: str, member: str) -> None: ...

    async def start(self) -> None: ...

    async def aclose(self) -> None: ...


class Line(Protocol):
    """The sessions' lines (:mod:`~chunkbridge.gateway.stores.line`): one process's
    (``memory``) or every instance's (``redis``), each decision atomic. A request admitted holds
    one of the session's turns under its waiter's ``member``."""

    async def enter(self, session_id: str, waiter: Waiter, limit: int, queue_max: int) -> Entry:
        """Run now (a turn was free and nobody waits), or wait (its position), or refused."""

    async def take(self, session_id: str, member: str, limit: int) -> Entry:
        """A waiting request looks again: admitted, still waiting, or gone (its entry lapsed)."""

    async def leave(self, session_id: str, member: str) -> None: ...

    async def head(self, session_id: str) -> Waiter | None:
        """The first waiting request, if any (and not taken as a steer)."""

    async def claim(self, session_id: str, member: str, owner: str) -> bool:
        """The running turn holding ``owner`` takes the first waiting request as a steer (see
        :meth:`~chunkbridge.gateway.stores.line.SessionLine.claim`); ``False``: it may not. If
        that hold lapses (its instance died), the request waits again."""

    async def join(self, session_id: str, member: str) -> bool:
        """The steer a turn took landed: its request follows that turn's next answer."""

    async def unclaim(self, session_id: str, member: str) -> bool:
        """The turn ended without the steer landing: its request waits again."""

    async def changed(self, session_id: str, within: float) -> None:
        """Until the session's line may have changed (a turn freed, a request left), or
        ``within`` seconds."""

    def note_answer(self, key: Key, message_id: str, user_id: str, ttl: float) -> None:
        """``key``'s newest answer is ``message_id`` (it answers the user message ``user_id``),
        kept ``ttl`` seconds (the stale guard compares with it). Never waits."""

    async def answer_of(self, key: Key) -> tuple[str, str] | None:
        """``key``'s newest answer noted: (its message id, the user message it answers)."""


class Claim(Protocol):
    """An answer as the ledger sees it: its entry and the tool call it is for."""

    @property
    def approval_id(self) -> str: ...

    @property
    def tool_call_id(self) -> str: ...


class ApprovalLedger(Protocol):
    """The approvals and questions this gateway issued, by session (see
    :mod:`chunkbridge.gateway.turn.answers`, which checks answers against it)."""

    def issue(self, session_id: str, approval: IssuedApproval) -> None:
        """Record an issued approval; called from inside a turn, so it never waits."""

    async def written(self) -> None:
        """What was issued so far is stored (before a turn's end reaches its client, who may
        answer at once — on another instance)."""

    async def lookup(self, session_id: str, approval_ids: Sequence[str]) -> list[str | None]:
        """Per id: the tool call id it was issued for, :data:`ANSWERED`, or ``None``."""

    async def claim(self, session_id: str, answers: Sequence[Claim]) -> bool:
        """Mark every answer's entry answered, or none when one already is (atomically)."""

    async def release(self, session_id: str, answers: Sequence[Claim]) -> None:
        """Undo a claim (the upstream never got the answers)."""

    async def aclose(self) -> None: ...


# -- transcripts -------------------------------------------------------------------------------

#: A stored message's status: its turn runs (``streaming``), ended normally (``done``), with an
#: ``error`` chunk, or cut short (``aborted``: a stop, a timeout, the client gone).
MessageStatus = Literal["streaming", "done", "error", "aborted"]


class StoreUnavailable(RuntimeError):
    """The transcript database cannot be reached or used (the message says which and why)."""


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """One ``UIMessage`` of a chat as stored: the message, its status and the AI SDK major it
    was produced for."""

    message: dict[str, Any]
    status: MessageStatus
    major: int


@dataclass(frozen=True, slots=True)
class Transcript:
    """A chat's messages in order; ``skipped`` rows did not load (corrupt, or written by a
    newer format) and were reported."""

    messages: list[StoredMessage]
    skipped: int = 0


@dataclass(frozen=True, slots=True)
class ChatSummary:
    chat_id: str
    title: str
    created_at: float
    updated_at: float
    messages: int


@dataclass(frozen=True, slots=True)
class ChatPage:
    """Chats, newest first; ``next`` is the cursor of the following page (``None``: the last)."""

    chats: list[ChatSummary]
    next: str | None


@dataclass(frozen=True, slots=True)
class Put:
    """One message to write (see :meth:`TranscriptStore.put_many`)."""

    key: Key
    message: dict[str, Any]
    status: MessageStatus
    major: int
    #: Names a chat created by this write.
    title: str = ""
    #: Drop the messages after it (a user message sent again: an edit or a regenerate).
    truncate_after: bool = False


class TranscriptStore(Protocol):
    """Where chats are kept (``store = sqlite | postgres``). Every method may raise
    :class:`StoreUnavailable`."""

    async def start(self) -> None:
        """Connect and bring the schema up to date (migrations)."""

    async def load(self, key: Key) -> Transcript: ...

    #: Where it is kept (the writer's transactions run there).
    database: Database

    async def put_many(self, puts: Sequence[Put]) -> None:
        """Write ``puts`` in order, in one transaction: each message is added at its chat's
        end, or updated in place when its id is stored."""

    def put_rows(self, cur: Cursor, puts: Sequence[Put]) -> None:
        """:meth:`put_many` in the caller's transaction (the writer's batches)."""

    async def chats(self, session_id: str, limit: int, cursor: str | None) -> ChatPage: ...

    async def delete(self, key: Key) -> bool:
        """Forget a chat; ``False`` when there was none."""

    async def purge(self, older_than: float) -> int:
        """Forget the chats not written since ``older_than`` (a UNIX time); how many."""

    async def aclose(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Claimed:
    """A durable turn's checkpoint as a takeover claims it, with the takeovers it had: in all,
    and from this checkpoint in a row (counted by the claim itself, so a taker that dies at
    once is counted too)."""

    body: bytes
    recoveries: int
    retries: int
    #: What the turn's first checkpoint wrote once for all (its request, its message's start).
    head: bytes


@dataclass(frozen=True, slots=True)
class Save:
    """A durable turn's checkpoint to write (:meth:`CheckpointStore.apply`): the turn's
    ``seq``-th, under ``fence``, with its ``head`` when it is the first."""

    key: Key
    fence: int
    seq: int
    body: bytes
    head: bytes | None = None


@dataclass(frozen=True, slots=True)
class Forget:
    """A durable turn ended: its checkpoint goes (unless a higher fence holds it)."""

    key: Key
    fence: int


#: What a durable turn writes of itself, in the store writer's transactions.
TurnWrite = Save | Forget


class CheckpointStore(Protocol):
    """Where durable turns record their checkpoints (``durable = true``: the transcript's
    database), one per running turn, written under a *fence*: the number of the instance's
    hold on the turn (a takeover's is higher). A write under a lower fence than the stored one
    changes nothing, and says so — how a paused owner that woke up learns it lost the turn.
    Every async method may raise :class:`StoreUnavailable`."""

    def apply(self, cur: Cursor, writes: Sequence[TurnWrite]) -> list[bool]:
        """Do ``writes`` in the caller's transaction (the store writer's batches), each saying
        whether it landed: a save ``False`` when a higher fence holds the turn, or — past the
        first — when the turn has no row (it ended); a forget always (fenced off, it is
        another instance's to do)."""

    async def claim(self, key: Key, fence: int) -> Claimed | None:
        """Hold the turn under ``fence`` from now on (the lower ones' writes fail), counting
        the takeover: its checkpoint, or ``None`` when there is none or a fence as high holds
        it."""

    async def forget(self, key: Key, fence: int) -> None:
        """The turn ended: its checkpoint goes (unless a higher fence holds it)."""

    async def running(self) -> list[Key]:
        """Every turn with a checkpoint (one an instance may have to take over)."""
