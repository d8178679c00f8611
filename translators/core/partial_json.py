"""The input of a tool call whose JSON is still arriving, as the AI SDK client reads it.

While ``tool-input-delta`` chunks stream, the client shows ``parsePartialJson(text)``: the text
parsed as it is, else parsed after ``fixJson`` closed what is open (strings, objects, arrays,
a literal such as ``tr`` → ``true``) and dropped what cannot be completed (a ``-`` alone, a
trailing comma), else nothing. A stored message of a turn that ended mid-call keeps that value,
so the gateway must compute the same one: general partial JSON parsers disagree on exactly the
cases a cut-off stream produces (``1.`` is ``1`` for the client; ``tr`` is ``true``), which is
why this is the client's own repair rule, state by state, and nothing more.
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["MISSING", "parse_partial_json"]


class _Missing:
    """No value: the client's ``undefined`` (a key holding it is absent from the JSON)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()

_LITERALS = ("true", "false", "null")
_OBJECT_STATES = frozenset(
    {"OBJECT_START", "OBJECT_KEY", "OBJECT_AFTER_KEY", "OBJECT_AFTER_COMMA", "OBJECT_BEFORE_VALUE"}
)
_ARRAY_STATES = frozenset({"ARRAY_START", "ARRAY_AFTER_COMMA", "ARRAY_AFTER_VALUE"})


def parse_partial_json(text: str) -> Any:
    """``text`` as JSON, repaired if it is cut off; :data:`MISSING` when even that fails."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        pass
    try:
        return orjson.loads(fix_json(text))
    except orjson.JSONDecodeError:
        return MISSING


def fix_json(text: str) -> str:  # noqa: C901 - one state machine, as the client's
    """Close what ``text`` left open; cut what cannot be completed."""
    stack = ["ROOT"]
    last_valid = -1
    literal_start = 0
    hex_digits = 0

    def value_start(char: str, i: int, after: str) -> None:
        nonlocal last_valid, literal_start
        if char == '"':
            inner = "STRING"
        elif char in "ftn":
            inner, literal_start = "LITERAL", i
        elif char == "-":
            stack[-1] = after
            stack.append("NUMBER")
            return
        elif char.isascii() and char.isdigit():
            inner = "NUMBER"
        elif char == "{":
            inner = "OBJECT_START"
        elif char == "[":
            inner = "ARRAY_START"
        else:
            return
        last_valid = i
        stack[-1] = after
        stack.append(inner)

    def after_value(char: str, i: int, container: str, close: str) -> None:
        nonlocal last_valid
        if char == ",":
            stack[-1] = f"{container}_AFTER_COMMA"
        elif char == close:
            last_valid = i
            stack.pop()

    for i, char in enumerate(text):
        state = stack[-1]
        if state == "ROOT":
            value_start(char, i, "FINISH")
        elif state in ("OBJECT_START", "OBJECT_AFTER_COMMA"):
            if char == '"':
                stack[-1] = "OBJECT_KEY"
            elif char == "}" and state == "OBJECT_START":
                last_valid = i
                stack.pop()
        elif state == "OBJECT_KEY":
            if char == '"':
                stack[-1] = "OBJECT_AFTER_KEY"
        elif state == "OBJECT_AFTER_KEY":
            if char == ":":
                stack[-1] = "OBJECT_BEFORE_VALUE"
        elif state == "OBJECT_BEFORE_VALUE":
            value_start(char, i, "OBJECT_AFTER_VALUE")
        elif state == "OBJECT_AFTER_VALUE":
            after_value(char, i, "OBJECT", "}")
        elif state == "STRING":
            if char == '"':
                stack.pop()
                last_valid = i
            elif char == "\\":
                stack.append("STRING_ESCAPE")
            else:
                last_valid = i
        elif state == "ARRAY_START":
            if char == "]":
                last_valid = i
                stack.pop()
            else:
                value_start(char, i, "ARRAY_AFTER_VALUE")
        elif state == "ARRAY_AFTER_VALUE":
            if char == ",":
                stack[-1] = "ARRAY_AFTER_COMMA"
            else:
                last_valid = i
                if char == "]":
                    stack.pop()
        elif state == "ARRAY_AFTER_COMMA":
            value_start(char, i, "ARRAY_AFTER_VALUE")
        elif state == "STRING_ESCAPE":
            stack.pop()
            if char == "u":
                hex_digits = 0
                stack.append("STRING_UNICODE_ESCAPE")
            else:
                last_valid = i
        elif state == "STRING_UNICODE_ESCAPE":
            if char in "0123456789abcdefABCDEF":
                hex_digits += 1
                if hex_digits == 4:
                    stack.pop()
                    last_valid = i
        elif state == "NUMBER":
            if char.isascii() and char.isdigit():
                last_valid = i
            elif char in "eE-.":
                pass
            else:
                stack.pop()
                if char in ",]" and stack[-1] == "ARRAY_AFTER_VALUE":
                    after_value(char, i, "ARRAY", "]")
                elif char in ",}" and stack[-1] == "OBJECT_AFTER_VALUE":
                    after_value(char, i, "OBJECT", "}")
        elif state == "LITERAL":
            partial = text[literal_start : i + 1]
            if any(literal.startswith(partial) for literal in _LITERALS):
                last_valid = i
            else:
                stack.pop()
                if stack[-1] == "OBJECT_AFTER_VALUE":
                    after_value(char, i, "OBJECT", "}")
                elif stack[-1] == "ARRAY_AFTER_VALUE":
                    after_value(char, i, "ARRAY", "]")

    out = [text[: last_valid + 1]]
    for state in reversed(stack):
        if state == "STRING":
            out.append('"')
        elif state in _OBJECT_STATES or state == "OBJECT_AFTER_VALUE":
            out.append("}")
        elif state in _ARRAY_STATES:
            out.append("]")
        elif state == "LITERAL":
            partial = text[literal_start:]
            for literal in _LITERALS:
                if literal.startswith(partial):
                    out.append(literal[len(partial) :])
                    break
    return "".join(out)
