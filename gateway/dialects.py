"""The dialect registry: built-in translators plus third-party ones from entry points.

A package registers a dialect with an entry point in the group ``chunkbridge.dialects``::

    [project.entry-points."chunkbridge.dialects"]
    my-dialect = "my_package.translator:MyTranslator"

The class must subclass :class:`translators.base.Translator`. Built-ins are registered the same
way (see ``pyproject.toml``) and are also importable without the package being installed.
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import entry_points

from translators.agent_ops_v2 import AgentOpsV2Translator
from translators.base import Translator, TranslatorOptions
from translators.open_harness import OpenHarnessTranslator
from translators.openai_chat import OpenAIChatTranslator

__all__ = ["UnknownDialect", "available_dialects", "create_translator", "get_dialect"]

ENTRY_POINT_GROUP = "chunkbridge.dialects"
BUILTIN: dict[str, type[Translator]] = {
    cls.dialect: cls for cls in (AgentOpsV2Translator, OpenHarnessTranslator, OpenAIChatTranslator)
}


class UnknownDialect(LookupError):
    def __init__(self, name: str) -> None:
        names = ", ".join(available_dialects())
        super().__init__(f"unknown dialect {name!r} (available: {names})")


@cache
def available_dialects() -> dict[str, type[Translator]]:
    """Every dialect by name: built-ins first, then entry points (which may not replace them)."""
    found = dict(BUILTIN)
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        if entry.name in found:
            continue
        cls = entry.load()
        if not (isinstance(cls, type) and issubclass(cls, Translator)):
            raise TypeError(f"entry point {entry.value} is not a Translator subclass")
        found[entry.name] = cls
    return found


def get_dialect(name: str) -> type[Translator]:
    try:
        return available_dialects()[name]
    except KeyError:
        raise UnknownDialect(name) from None


def create_translator(name: str, options: TranslatorOptions | None = None) -> Translator:
    return get_dialect(name)(options)
