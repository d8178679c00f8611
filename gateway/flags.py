"""Command-line flags generated from the settings models: no hand-kept flag table to drift.

One flag per field, ``--`` + the field name with dashes (``--idle-timeout``), a dialect's fields
under its name (``--openai-chat-model``). The flag's shape follows the field's type: choices for
a ``Literal`` or an enum, ``--x/--no-x`` for a bool, several values for a list, a JSON object for
a dict; the help text is the field's description and its default.
"""

from __future__ import annotations

import argparse
import enum
import types
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import orjson
from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo

__all__ = ["add_model_flags", "collect"]


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc.msg}") from exc
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("must be a JSON object")
    return value


def _unwrap_optional(annotation: Any) -> Any:
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def _shape(annotation: Any) -> dict[str, Any]:
    """argparse keyword arguments for a field of this type."""
    annotation = _unwrap_optional(annotation)
    origin = get_origin(annotation)
    if annotation is bool:
        return {"action": argparse.BooleanOptionalAction}
    if origin is Literal:
        values = get_args(annotation)
        return {"type": type(values[0]), "choices": values}
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return {"choices": [member.value for member in annotation]}
    if origin is list:
        return {"nargs": "*", "metavar": "VALUE"}
    if origin is dict or annotation is dict:
        return {"type": _json_object, "metavar": "JSON"}
    if annotation in (int, float):
        return {"type": annotation}
    if annotation in (str, Path, SecretStr):
        return {"type": str}
    raise TypeError(f"no command-line form for a setting of type {annotation!r}")


def _help(field: FieldInfo) -> str:
    text = field.description or ""
    default = field.default
    if isinstance(default, enum.Enum):
        default = default.value
    if default not in (None, [], {}, "") and not isinstance(default, bool):
        text += f" (default: {default})"
    elif default is True:
        text += " (default: on)"
    return text


def add_model_flags(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    model: type[BaseModel],
    *,
    prefix: str = "",
    exclude: Iterable[str] = (),
) -> dict[str, str]:
    """Add a flag for each field of ``model``; return ``{argparse dest: field name}``."""
    skip = set(exclude)
    dests: dict[str, str] = {}
    for name, field in model.model_fields.items():
        if name in skip or field.exclude:
            continue
        option = f"--{prefix}{name}".replace("_", "-")
        dest = option[2:].replace("-", "_")
        parser.add_argument(
            option, dest=dest, default=None, help=_help(field), **_shape(field.annotation)
        )
        dests[dest] = name
    return dests


def collect(args: argparse.Namespace, dests: Mapping[str, str]) -> dict[str, Any]:
    """The values given on the command line (flags left out are not in the result)."""
    values = {name: getattr(args, dest, None) for dest, name in dests.items()}
    return {name: value for name, value in values.items() if value is not None}
