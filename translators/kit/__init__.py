"""The dialect kit: what a dialect module imports to describe and translate its upstream.

::

    from chunkbridge.kit import Dialect, Translator, WebSocketContract, CloseRequest, CloseReason

It sits between the dialect-blind stream core (:mod:`chunkbridge.translators.core`, which never
imports a dialect or the kit) and the dialects (:mod:`chunkbridge.translators.dialects`, and
third-party packages), which import the kit and the core, never each other.
"""

from chunkbridge.kit.blocks import (
    IndexedParts,
    StreamedToolCalls,
    provider_metadata,
    usage_metadata,
)
from chunkbridge.kit.dialect import (
    DEFAULT_RETRY_STATUSES,
    AnsweredCall,
    ApprovalAnswer,
    DemoScript,
    DemoStep,
    Dialect,
    FrameTemplates,
    HttpRequest,
    HttpSseContract,
    NoSettings,
    Pause,
    RequestRejected,
    TurnFrames,
    TurnInput,
    WebSocketContract,
    build_frames,
)
from chunkbridge.kit.translator import (
    IdFactory,
    MalformedEvent,
    Translator,
    TranslatorOptions,
    UnknownEventPolicy,
    counter_ids,
    error_message,
    flat_text_delta,
    optional_str,
    require_dict,
    require_list,
    require_str,
)
from chunkbridge.translators.core.closing import CloseReason, CloseRequest, DeferredClose
from chunkbridge.translators.core.surrogates import join_surrogates
from chunkbridge.translators.core.turn import Chunk, Item

__all__ = [
    "DEFAULT_RETRY_STATUSES",
    "AnsweredCall",
    "ApprovalAnswer",
    "Chunk",
    "CloseReason",
    "CloseRequest",
    "DeferredClose",
    "DemoScript",
    "DemoStep",
    "Dialect",
    "FrameTemplates",
    "HttpRequest",
    "HttpSseContract",
    "IdFactory",
    "IndexedParts",
    "Item",
    "MalformedEvent",
    "NoSettings",
    "Pause",
    "RequestRejected",
    "StreamedToolCalls",
    "Translator",
    "TranslatorOptions",
    "TurnFrames",
    "TurnInput",
    "UnknownEventPolicy",
    "WebSocketContract",
    "build_frames",
    "counter_ids",
    "error_message",
    "flat_text_delta",
    "join_surrogates",
    "optional_str",
    "provider_metadata",
    "require_dict",
    "require_list",
    "require_str",
    "usage_metadata",
]
