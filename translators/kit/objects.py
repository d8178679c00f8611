"""Events given as objects: an SDK's pydantic models read as the JSON they were built from.

An app that runs its model's SDK in-process hands chunkbridge the SDK's event objects (the
``openai`` and ``anthropic`` packages' pydantic models: ``ChatCompletionChunk``,
``RawContentBlockDeltaEvent``…; a library's own, such as the AG-UI events pydantic-ai makes),
not JSON. An SDK's were built from the provider's JSON: the fields that JSON had are the
model's ``model_fields_set`` (by their aliases), the keys the SDK has no field for its
``model_extra``. :func:`wire_dict` gives that JSON back as a dict without pydantic's serializer —
``model_dump`` costs several microseconds per event and adds, as ``None``, every field the
event did not have — so a translator reads exactly what the provider sent over HTTP, through
the same handlers and the same hot path. A model made in code says what it is with its
defaults too (an event's ``type``): every field that is not ``None`` is read as well, which is
what such a library sends over the wire (its JSON leaves ``None`` out).

Such an SDK raises where the provider's stream said ``error`` (or refused the request):
:func:`sdk_error` reads the provider's error object back out of the exception, so the
translator ends the turn with the provider's own message, as the gateway does.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import BaseModel

__all__ = ["field_of", "read_model", "sdk_error", "wire_dict"]

#: Values that are JSON already (no copy needed).
_PLAIN = frozenset({str, int, float, bool, type(None)})
#: A model class → how it is read: its fields whose JSON key differs from their name (most
#: have none), and those whose default is not ``None`` (read when not given).
_PLANS: dict[type, tuple[dict[str, str], frozenset[str]]] = {}
#: (a model class, the fields an instance was given) → the (field, JSON key) pairs to read, in
#: the fields' order: an SDK's events come in a few shapes each, so this is worked out once per
#: shape, not per event.
_ORDERS: dict[tuple[type, frozenset[str]], tuple[tuple[str, str], ...]] = {}
#: Shapes remembered at most (a bound: a library that makes endless shapes only costs more).
_MAX_ORDERS = 4096
#: A value's type → whether it is a pydantic model (``isinstance`` on one costs more).
_MODELS: dict[type, bool] = {}


def _plan(cls: type[BaseModel]) -> tuple[dict[str, str], frozenset[str]]:
    fields = cls.model_fields
    aliases = {name: f.alias for name, f in fields.items() if f.alias and f.alias != name}
    defaulted = frozenset(
        name
        for name, f in fields.items()
        if f.default_factory is not None or (f.default is not None and not f.is_required())
    )
    _PLANS[cls] = plan = (aliases, defaulted)
    return plan


def _order(cls: type[BaseModel], given: frozenset[str]) -> tuple[tuple[str, str], ...]:
    plan = _PLANS.get(cls)
    aliases, defaulted = plan if plan is not None else _plan(cls)
    read = given | defaulted
    order = tuple((name, aliases.get(name, name)) for name in cls.model_fields if name in read)
    if len(_ORDERS) >= _MAX_ORDERS:
        _ORDERS.clear()
    _ORDERS[cls, given] = order
    return order


def wire_dict(model: BaseModel) -> dict[str, Any]:
    """``model`` as the JSON object it was read from: the fields it was given and those whose
    default is not ``None`` (nested models likewise; enums as their values), and its extra
    keys."""
    cls = type(model)
    given = frozenset(model.__pydantic_fields_set__)
    order = _ORDERS.get((cls, given))
    if order is None:
        order = _order(cls, given)
    values = model.__dict__
    plain = _PLAIN
    out: dict[str, Any] = {}
    for name, key in order:
        value = values[name]
        out[key] = value if type(value) in plain else _wire(value)
    extra = model.__pydantic_extra__
    if extra:
        for key, value in extra.items():
            out[key] = _wire(value)
    return out


def read_model(value: Any) -> dict[str, Any] | None:
    """``value`` as :func:`wire_dict` reads it when it is a pydantic model, else ``None``."""
    kind = type(value)
    model = _MODELS.get(kind)
    if model is None:
        model = _MODELS[kind] = isinstance(kind, type) and issubclass(kind, BaseModel)
    return wire_dict(value) if model else None


def field_of(value: Any, name: str) -> Any:
    """The field ``name`` of an event object, ``None`` when it has none — without the
    exception a pydantic model's missing attribute costs."""
    fields = getattr(value, "__dict__", None)
    return fields.get(name) if type(fields) is dict else None


def _wire(value: Any) -> Any:
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is list:
        return [item if type(item) in _PLAIN else _wire(item) for item in value]
    if kind is dict:
        return {key: _wire(item) for key, item in value.items()}
    model = _MODELS.get(kind)
    if model is None:
        model = _MODELS[kind] = issubclass(kind, BaseModel)
    if model:
        return wire_dict(value)
    if isinstance(value, Enum):
        return value.value
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
