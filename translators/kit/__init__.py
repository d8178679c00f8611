"""The dialect kit, chunkbridge's public dialect API: everything a dialect imports to describe
and translate its upstream, built-in or third-party, from this one module::

    from chunkbridge.kit import Dialect, Translator, WebSocketContract, CloseRequest, CloseReason

Its submodules are private: what is not in ``__all__`` here may change in any release. The kit
sits between the dialect-blind stream core (:mod:`chunkbridge.translators.core`, which never
imports a dialect or the kit) and the dialects, which import the kit and the wire vocabularies
(:mod:`chunkbridge.protocol_specs`), never each other. What it holds:

* a dialect's description (:class:`Dialect`, its WebSocket or HTTP contract, settings, demo),
  or an in-process one's (:class:`InProcessContract`, :class:`LibraryTranslator`: a Python
  library's event objects and their recorded form);
* the translator base class (:class:`Translator`: dispatch, the unknown-event policy, the answer's
  :meth:`~Translator.begin` and :meth:`~Translator.finish`, text and reasoning parts, questions)
  and the event checks (:func:`require_str`…);
* what a turn carries in (:class:`TurnInput`: the request, the answered calls and approvals);
* events given as objects by an in-process source (:func:`wire_dict`: an SDK's pydantic model
  as the JSON it was read from; :func:`sdk_error`: the provider's error an SDK raised;
  :meth:`Translator.read_object`, :meth:`Translator.read_error`);
* building blocks for model APIs (indexed parts, streamed tool calls, usage) and the pieces
  every provider dialect shares (settings, history in steps, data URLs, a refusal's error).
"""

from chunkbridge.kit.blocks import (
    IndexedParts,
    StreamedToolCalls,
    provider_metadata,
    usage_metadata,
)
from chunkbridge.kit.dialect import (
    DEFAULT_RETRY_STATUSES,
    DemoScript,
    DemoStep,
    Dialect,
    Frame,
    HttpRequest,
    HttpSseContract,
    NoSettings,
    Pause,
    WebSocketContract,
)
from chunkbridge.kit.events import (
    AGENT_ERROR,
    PROVIDER_ERROR,
    TOOL_ERROR,
    MalformedEvent,
    error_message,
    flat_text_delta,
    json_text,
    optional_str,
    require_dict,
    require_list,
    require_str,
)
from chunkbridge.kit.frames import FrameTemplates, TurnFrames, build_frames
from chunkbridge.kit.in_process import (
    STREAM_END,
    STREAM_SIGNAL,
    InProcessContract,
    LibraryTranslator,
    Record,
    record_of,
    stream_error,
)
from chunkbridge.kit.objects import field_of, read_model, sdk_error, wire_dict
from chunkbridge.kit.provider import (
    DataUrl,
    ProviderSettings,
    ProviderToolSettings,
    add_turn,
    apply_overrides,
    content_pieces,
    finish_body,
    output_text,
    parse_data_url,
    provider_error,
    steps_of,
    system_prompt,
    tool_name_of,
)
from chunkbridge.kit.tool_results import Media, media_note, result_pieces
from chunkbridge.kit.translator import (
    IdFactory,
    Translator,
    TranslatorOptions,
    UnknownEventPolicy,
    counter_ids,
)
from chunkbridge.kit.turn_input import (
    AnsweredCall,
    ApprovalAnswer,
    RequestRejected,
    TurnInput,
    is_answered,
)
from chunkbridge.translators.core.closing import CloseReason, CloseRequest, DeferredClose
from chunkbridge.translators.core.event_translator import Chunk, Item
from chunkbridge.translators.core.surrogates import join_surrogates

__all__ = [
    "AGENT_ERROR",
    "DEFAULT_RETRY_STATUSES",
    "PROVIDER_ERROR",
    "STREAM_END",
    "STREAM_SIGNAL",
    "TOOL_ERROR",
    "AnsweredCall",
    "ApprovalAnswer",
    "Chunk",
    "CloseReason",
    "CloseRequest",
    "DataUrl",
    "DeferredClose",
    "DemoScript",
    "DemoStep",
    "Dialect",
    "Frame",
    "FrameTemplates",
    "HttpRequest",
    "HttpSseContract",
    "IdFactory",
    "InProcessContract",
    "IndexedParts",
    "Item",
    "LibraryTranslator",
    "MalformedEvent",
    "Media",
    "NoSettings",
    "Pause",
    "ProviderSettings",
    "ProviderToolSettings",
    "Record",
    "RequestRejected",
    "StreamedToolCalls",
    "Translator",
    "TranslatorOptions",
    "TurnFrames",
    "TurnInput",
    "UnknownEventPolicy",
    "WebSocketContract",
    "add_turn",
    "apply_overrides",
    "finish_body",
    "build_frames",
    "content_pieces",
    "counter_ids",
    "error_message",
    "field_of",
    "flat_text_delta",
    "is_answered",
    "join_surrogates",
    "json_text",
    "media_note",
    "optional_str",
    "output_text",
    "parse_data_url",
    "provider_error",
    "provider_metadata",
    "record_of",
    "require_dict",
    "require_list",
    "read_model",
    "require_str",
    "result_pieces",
    "sdk_error",
    "stream_error",
    "steps_of",
    "system_prompt",
    "tool_name_of",
    "usage_metadata",
    "wire_dict",
]
