"""Events given as objects: an SDK's pydantic models read as the JSON they were built from.

An app that runs its model's SDK in-process hands chunkbridge the SDK's event objects (the
``openai`` and ``anthropic`` packages' pydantic models: ``ChatCompletionChunk``,
``RawContentBlockDeltaEvent``…), not JSON. Each was built from the provider's JSON: the fields
that JSON had are the model's ``model_fields_set`` (by their aliases), the keys the SDK has no
field for its ``model_extra``. :func:`wire_dict` gives that JSON back as a dict without
pydantic's serializer — ``model_dump`` costs several microseconds per event and adds, as
``None``, every field the event did not have — so a translator reads exactly what the provider
sent over HTTP, through the same handlers and the same hot path.

Such an SDK raises where the provider's stream said ``error`` (or refused the request):
:func:`sdk_error` reads the provider's error object back out of the exception, so the
translator ends the turn with the provider's own message, as the gateway does.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

__all__ = ["sdk_error", "wire_dict"]

#: Values that are JSON already (no copy needed).
_PLAIN = frozenset({str, int, float, bool, type(None)})
#: A model class → its fields whose JSON key differs from their name (most have none).
_ALIASES: dict[type, dict[str, str]] = {}


def _aliases(cls: type[BaseModel]) -> dict[str, str]:
    table = _ALIASES.get(cls)
    if table is None:
        fields = cls.model_fields
        table = {name: f.alias for name, f in fields.items() if f.alias and f.alias != name}
        _ALIASES[cls] = table
    return table


def wire_dict(model: BaseModel) -> dict[str, Any]:
    """``model`` as the JSON object it was read from: the fields it was given (nested models
    likewise) and its extra keys; not the fields left at their defaults."""
    given = model.__pydantic_fields_set__
    aliases = _aliases(type(model))
    out: dict[str, Any] = {}
    for name, value in model.__dict__.items():
        if name in given:
            out[aliases.get(name, name) if aliases else name] = (
                value if type(value) in _PLAIN else _wire(value)
            )
    extra = model.__pydantic_extra__
    if extra:
        for key, value in extra.items():
            out[key] = _wire(value)
    return out


def _wire(value: Any) -> Any:
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is list:
        return [_wire(item) for item in value]
    if kind is dict:
        return {key: _wire(item) for key, item in value.items()}
    if isinstance(value, BaseModel):
        return wire_dict(value)
    return value


def sdk_error(error: BaseException) -> dict[str, Any] | None:
    """The provider's error object an SDK's exception carries as its ``body`` (the ``openai``
    and ``anthropic`` SDKs' ``APIError``: the error of a stream's ``error`` event, or the body
    of a refused request, ``{"error": {...}}``); ``None`` for any other exception."""
    body = getattr(error, "body", None)
    if not isinstance(body, dict):
        return None
    inner = body.get("error", body)
    if isinstance(inner, dict) and isinstance(inner.get("message"), str):
        return inner
    return None
