"""Command-line flags generated from the settings models: no hand-kept flag table to drift.

One flag per field, ``--`` + the field name with dashes (``--idle-timeout``), a dialect's fields
under its name (``--openai-chat-model``). The flag's shape follows the field's type: choices for
a ``Literal`` or an enum, ``--x/--no-x`` for a bool, several values for a list, a JSON object for
a dict; the help text is the field's description and its default. :func:`add_settings` gives a
subcommand every setting (``--config FILE.toml`` and the flags of the gateway and each registered
dialect); :func:`load_settings` reads them back in the configuration's order.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import sys
import types
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal, TypeAlias, Union, get_args, get_origin

import orjson
from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from chunkbridge.gateway.config import GatewayConfig
from chunkbridge.gateway.config_sources import LoadedConfig, load_config
from chunkbridge.protocol_specs.ui_message_stream import ALL_MAJORS, DEFAULT_TARGET

__all__ = [
    "Flags",
    "SubParsers",
    "add_model_flags",
    "add_settings",
    "add_target",
    "collect",
    "fail",
    "load_settings",
    "target_problem",
]

#: The ``add_subparsers`` object: each command module adds its own subcommands to it.
SubParsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


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
    default = None if field.default is PydanticUndefined else field.default  # a factory's
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


@dataclasses.dataclass(slots=True)
class Flags:
    """The generated flags of one subcommand: argparse dest → setting."""

    gateway: dict[str, str] = dataclasses.field(default_factory=dict)
    dialects: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)


def add_settings(parser: argparse.ArgumentParser, exclude: Iterable[str] = ()) -> Flags:
    from chunkbridge.gateway.registry import registry

    parser.add_argument("--config", metavar="FILE.toml", help="TOML configuration file")
    flags = Flags(add_model_flags(parser, GatewayConfig, exclude=exclude))
    for name, dialect in registry().dialects.items():
        if dialect.settings.model_fields:
            group = parser.add_argument_group(f"dialect {name}")
            flags.dialects[name] = add_model_flags(group, dialect.settings, prefix=f"{name}-")
    return flags


def load_settings(args: argparse.Namespace, flags: Flags, **overrides: Any) -> LoadedConfig:
    from chunkbridge.gateway.registry import registry

    models = {name: d.settings for name, d in registry().dialects.items()}
    values = collect(args, flags.gateway)
    values.update(overrides)
    return load_config(
        Path(args.config) if args.config else None,
        dialect_models=models,
        dialect_flags={name: collect(args, dests) for name, dests in flags.dialects.items()},
        **values,
    )


def fail(command: str, message: object) -> int:
    """A usage error of ``command``: the message on stderr, exit code 2."""
    print(f"chunkbridge {command}: {message}", file=sys.stderr)
    return 2


def add_target(parser: argparse.ArgumentParser) -> None:
    """``--target`` and ``--reset-step``: the client, as the settings of the same names say it
    (check them with :func:`target_problem`)."""
    parser.add_argument(
        "--target",
        type=int,
        choices=ALL_MAJORS,
        default=DEFAULT_TARGET,
        help=f"AI SDK major of the client (default {DEFAULT_TARGET}: accepted by 5, 6 and 7)",
    )
    parser.add_argument(
        "--reset-step",
        action="store_true",
        help=GatewayConfig.model_fields["reset_step"].description,
    )


def target_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the client :func:`add_target`'s flags name, if anything."""
    if args.reset_step and args.target != 7:
        return "--reset-step needs --target 7 (reset-step is in ai 7.0.70 and later)"
    return None
