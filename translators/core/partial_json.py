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

from collections.abc import Callable
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


def fix_json(text: str) -> str:
    """Close what ``text`` left open; cut what cannot be completed."""
    scan = _Scan(text)
    for i, char in enumerate(text):
        _TRANSITIONS[scan.stack[-1]](scan, char, i)
    return text[: scan.last_valid + 1] + scan.completion()


class _Scan:
    """The client's ``fixJson`` state: a stack of states, the end of the longest prefix that
    can be completed (``last_valid``), where an open literal began and how many hex digits a
    ``\\u`` escape has so far. Each method is one state's transition on one character."""

    __slots__ = ("hex_digits", "last_valid", "literal_start", "stack", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.stack = ["ROOT"]
        self.last_valid = -1
        self.literal_start = 0
        self.hex_digits = 0

    def value_start(self, char: str, i: int, after: str) -> None:
        """A value may start here; once it does, the enclosing state moves on to ``after``."""
        if char == '"':
            inner = "STRING"
        elif char in "ftn":
            inner, self.literal_start = "LITERAL", i
        elif char == "-":
            self.stack[-1] = after
            self.stack.append("NUMBER")
            return
        elif char.isascii() and char.isdigit():
            inner = "NUMBER"
        elif char == "{":
            inner = "OBJECT_START"
        elif char == "[":
            inner = "ARRAY_START"
        else:
            return
        self.last_valid = i
        self.stack[-1] = after
        self.stack.append(inner)

    def after_value(self, char: str, i: int, container: str, close: str) -> None:
        if char == ",":
            self.stack[-1] = f"{container}_AFTER_COMMA"
        elif char == close:
            self.last_valid = i
            self.stack.pop()

    def root(self, char: str, i: int) -> None:
        self.value_start(char, i, "FINISH")

    def object_open(self, char: str, i: int) -> None:
        """``OBJECT_START`` and ``OBJECT_AFTER_COMMA``: a key, or ``}`` right after ``{``."""
        if char == '"':
            self.stack[-1] = "OBJECT_KEY"
        elif char == "}" and self.stack[-1] == "OBJECT_START":
            self.last_valid = i
            self.stack.pop()

    def object_key(self, char: str, i: int) -> None:
        if char == '"':
            self.stack[-1] = "OBJECT_AFTER_KEY"

    def object_after_key(self, char: str, i: int) -> None:
        if char == ":":
            self.stack[-1] = "OBJECT_BEFORE_VALUE"

    def object_before_value(self, char: str, i: int) -> None:
        self.value_start(char, i, "OBJECT_AFTER_VALUE")

    def object_after_value(self, char: str, i: int) -> None:
        self.after_value(char, i, "OBJECT", "}")

    def string(self, char: str, i: int) -> None:
        if char == '"':
            self.stack.pop()
            self.last_valid = i
        elif char == "\\":
            self.stack.append("STRING_ESCAPE")
        else:
            self.last_valid = i

    def string_escape(self, char: str, i: int) -> None:
        self.stack.pop()
        if char == "u":
            self.hex_digits = 0
            self.stack.append("STRING_UNICODE_ESCAPE")
        else:
            self.last_valid = i

    def unicode_escape(self, char: str, i: int) -> None:
        if char in "0123456789abcdefABCDEF":
            self.hex_digits += 1
            if self.hex_digits == 4:
                self.stack.pop()
                self.last_valid = i

    def array_start(self, char: str, i: int) -> None:
        if char == "]":
            self.last_valid = i
            self.stack.pop()
        else:
            self.value_start(char, i, "ARRAY_AFTER_VALUE")

    def array_after_value(self, char: str, i: int) -> None:
        if char == ",":
            self.stack[-1] = "ARRAY_AFTER_COMMA"
        else:
            self.last_valid = i
            if char == "]":
                self.stack.pop()

    def array_after_comma(self, char: str, i: int) -> None:
        self.value_start(char, i, "ARRAY_AFTER_VALUE")

    def number(self, char: str, i: int) -> None:
        if char.isascii() and char.isdigit():
            self.last_valid = i
        elif char in "eE-.":
            pass
        else:
            self.stack.pop()
            if char in ",]" and self.stack[-1] == "ARRAY_AFTER_VALUE":
                self.after_value(char, i, "ARRAY", "]")
            elif char in ",}" and self.stack[-1] == "OBJECT_AFTER_VALUE":
                self.after_value(char, i, "OBJECT", "}")

    def literal(self, char: str, i: int) -> None:
        partial = self.text[self.literal_start : i + 1]
        if any(literal.startswith(partial) for literal in _LITERALS):
            self.last_valid = i
        else:
            self.stack.pop()
            if self.stack[-1] == "OBJECT_AFTER_VALUE":
                self.after_value(char, i, "OBJECT", "}")
            elif self.stack[-1] == "ARRAY_AFTER_VALUE":
                self.after_value(char, i, "ARRAY", "]")

    def finish(self, char: str, i: int) -> None:
        """After the root value: the rest is cut."""

    def completion(self) -> str:
        """What closes the states still open, innermost first."""
        out = []
        for state in reversed(self.stack):
            if state == "STRING":
                out.append('"')
            elif state in _OBJECT_STATES or state == "OBJECT_AFTER_VALUE":
                out.append("}")
            elif state in _ARRAY_STATES:
                out.append("]")
            elif state == "LITERAL":
                partial = self.text[self.literal_start :]
                for literal in _LITERALS:
                    if literal.startswith(partial):
                        out.append(literal[len(partial) :])
                        break
        return "".join(out)


#: Each state's transition: the table is the client's ``switch``.
_TRANSITIONS: dict[str, Callable[[_Scan, str, int], None]] = {
    "ROOT": _Scan.root,
    "FINISH": _Scan.finish,
    "OBJECT_START": _Scan.object_open,
    "OBJECT_AFTER_COMMA": _Scan.object_open,
    "OBJECT_KEY": _Scan.object_key,
    "OBJECT_AFTER_KEY": _Scan.object_after_key,
    "OBJECT_BEFORE_VALUE": _Scan.object_before_value,
    "OBJECT_AFTER_VALUE": _Scan.object_after_value,
    "STRING": _Scan.string,
    "STRING_ESCAPE": _Scan.string_escape,
    "STRING_UNICODE_ESCAPE": _Scan.unicode_escape,
    "ARRAY_START": _Scan.array_start,
    "ARRAY_AFTER_VALUE": _Scan.array_after_value,
    "ARRAY_AFTER_COMMA": _Scan.array_after_comma,
    "NUMBER": _Scan.number,
    "LITERAL": _Scan.literal,
}
