"""Gemini's streamed function calls (``streamFunctionCallArguments``): a call's arguments come
as a series of ``partialArgs``, each a JSON path into the arguments and a value (or a piece of a
string), which build the arguments object as they arrive."""

from __future__ import annotations

from typing import Any

from chunkbridge.kit import MalformedEvent

__all__ = ["StreamedCall"]


class StreamedCall:
    """The arguments of a streamed function call, built from ``partialArgs`` entries: a value
    at a JSON path (``$.recipe.steps[0]``), strings arriving in pieces, containers opened by an
    entry without a value."""

    def __init__(self, call_id: str, name: str, meta: dict[str, Any] | None) -> None:
        self.call_id, self.name, self.meta = call_id, name, meta
        self.args: dict[str, Any] = {}

    def add(self, arg: dict[str, Any]) -> None:
        path = arg.get("jsonPath")
        if not isinstance(path, str):
            raise MalformedEvent("a partial argument needs a jsonPath")
        is_array = path.endswith("[]")
        segments = _path_segments(path.removesuffix("[]").removeprefix("$").lstrip("."))
        if not segments:
            return
        parent: Any = self.args
        for segment, following in zip(segments, segments[1:], strict=False):
            parent = _child(parent, segment, [] if isinstance(following, int) else {})
            if parent is None:
                return  # a path through a value that is not a container: ignored
        leaf = segments[-1]
        existing = _get(parent, leaf)
        if isinstance(arg.get("stringValue"), str):
            value: Any = arg["stringValue"]
            if isinstance(existing, str):
                value = existing + value
        elif "numberValue" in arg or "boolValue" in arg:
            value = arg.get("numberValue", arg.get("boolValue"))
        elif "nullValue" in arg:
            value = None
        elif existing is None and arg.get("willContinue") is not True:
            value = [] if is_array else {}
        else:
            return
        _set(parent, leaf, value)


def _path_segments(path: str) -> list[str | int]:
    segments: list[str | int] = []
    for part in path.split(".") if path else ():
        name, _, rest = part.partition("[")
        if name:
            segments.append(name)
        for index in rest.replace("]", "").split("["):
            if index.isdigit():
                segments.append(int(index))
    return segments


def _get(container: Any, key: str | int) -> Any:
    if isinstance(container, dict):
        return container.get(key)
    if isinstance(container, list) and isinstance(key, int) and key < len(container):
        return container[key]
    return None


def _set(container: Any, key: str | int, value: Any) -> None:
    if isinstance(container, dict):
        container[key] = value
    elif isinstance(container, list) and isinstance(key, int) and key <= len(container):
        if key == len(container):
            container.append(value)
        else:
            container[key] = value


def _child(container: Any, key: str | int, empty: Any) -> Any:
    child = _get(container, key)
    if child is None:
        _set(container, key, empty)
        child = _get(container, key)
    return child if isinstance(child, (dict, list)) else None
