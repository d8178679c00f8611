"""SSE encoding (what we write) and decoding (eventsource-parser semantics, split anywhere)."""

from __future__ import annotations

import json

import orjson
import pytest

from chunkbridge.translators.core.sse_codec import (
    DONE_FRAME,
    KEEPALIVE_FRAME,
    SseDecoder,
    encode_chunk,
    encode_chunks,
)
from tests.helpers import assert_valid_for, decode_sse


def test_chunk_is_one_compact_data_line() -> None:
    assert encode_chunk({"type": "text-delta", "id": "t", "delta": "a b"}) == (
        b'data: {"type":"text-delta","id":"t","delta":"a b"}\n\n'
    )
    assert DONE_FRAME == b"data: [DONE]\n\n"
    assert KEEPALIVE_FRAME.startswith(b":")


def test_null_optional_fields_are_omitted_and_required_unknowns_kept() -> None:
    assert encode_chunk({"type": "start", "messageId": None}) == b'data: {"type":"start"}\n\n'
    encoded = encode_chunk(
        {"type": "tool-input-available", "toolCallId": "c", "toolName": "s", "title": None}
    )
    assert json.loads(encoded[6:]) == {
        "type": "tool-input-available",
        "toolCallId": "c",
        "toolName": "s",
        "input": None,
    }
    assert (
        json.loads(
            encode_chunk({"type": "tool-output-available", "toolCallId": "c", "output": None})[6:]
        )["output"]
        is None
    )
    assert json.loads(encode_chunk({"type": "data-x", "id": None})[6:]) == {
        "type": "data-x",
        "data": None,
    }
    assert json.loads(encode_chunk({"type": "message-metadata"})[6:]) == {
        "type": "message-metadata",
        "messageMetadata": None,
    }


@pytest.mark.parametrize(
    "text",
    [
        "\ud800 lone",
        "pair \U0001f600",
        "split pair \ud83d\ude00",
        "sep\u2028and\u2029",
        "data: [DONE]\n\nevent: x\r\n",
        "\x00",
    ],
)
def test_awkward_text_stays_one_valid_utf8_event(text: str) -> None:
    body = encode_chunk({"type": "text-delta", "id": "t", "delta": text})
    body.decode("utf-8")  # strict: raises on invalid UTF-8
    assert body.count(b"\n\n") == 1 and body.endswith(b"\n\n")
    (chunk,) = decode_sse(body)
    expected = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    assert chunk["delta"] == expected


def test_non_json_values_fall_back_to_strings() -> None:
    body = encode_chunk({"type": "data-x", "data": {1: {2, 3}.__class__.__name__, "o": object()}})
    assert json.loads(body[6:])["data"]["1"] == "set"


def test_encode_chunks_coalesces() -> None:
    chunks = [{"type": "start"}, {"type": "finish"}]
    assert encode_chunks(chunks) == encode_chunk(chunks[0]) + encode_chunk(chunks[1])


BODY = (
    '\ufeffdata: {"a":1}\r\n\r\n: keep-alive\n\nevent: x\nid: 3\ndata: {"b":\r\ndata: 2}\r\r'
    'data:{"c":"é😀"}\n\nfoo: bar\ndata\n\ndata: [DONE]\n\ndata: {"tail":1}\n'
)


def _decode_whole(text: str) -> tuple[list[tuple[str, int]], str | None]:
    decoder = SseDecoder()
    events = decoder.decode(text)
    tail = decoder.flush()
    return [(e.data, e.line) for e in events], tail.data if tail else None


def test_decoder_semantics() -> None:
    events, tail = _decode_whole(BODY)
    assert [d for d, _ in events] == ['{"a":1}', '{"b":\n2}', '{"c":"é😀"}', "", "[DONE]"]
    assert tail == '{"tail":1}'
    assert events[0][1] == 1


def test_decoder_gives_the_same_events_for_every_byte_split() -> None:
    raw = BODY.encode("utf-8")
    whole = _decode_whole(BODY)
    for cut in range(len(raw) + 1):
        decoder = SseDecoder()
        events = decoder.decode_bytes(raw[:cut]) + decoder.decode_bytes(raw[cut:])
        tail = decoder.flush()
        assert ([(e.data, e.line) for e in events], tail.data if tail else None) == whole, cut


def test_round_trip_through_validator() -> None:
    chunks = [
        {"type": "start"},
        {"type": "start-step"},
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": "\u2028\ud800"},
        {"type": "text-end", "id": "t"},
        {"type": "finish-step"},
        {"type": "finish"},
    ]
    body = encode_chunks(chunks) + DONE_FRAME
    assert_valid_for(body)
    assert orjson.loads(body.split(b"\n\n")[3][6:])["delta"] == "\u2028\ufffd"


def test_integers_beyond_64_bits_and_nan_still_encode() -> None:
    body = encode_chunk({"type": "data-x", "data": {"big": 2**70, "nan": float("nan")}})
    assert json.loads(body[6:])["data"] == {"big": 2**70, "nan": None}
