"""The dialect registry: every :class:`~chunkbridge.kit.Dialect` registered under the entry point
group ``chunkbridge.dialects``, the built-in ones included (``pyproject.toml``)::

    [project.entry-points."chunkbridge.dialects"]
    my-dialect = "my_package.dialect:DIALECT"

The gateway knows dialects only through this registry, never by name. A dialect whose entry
point fails to load is reported by name (``chunkbridge dialects`` lists it with the error) and
does not take the others down.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from importlib.metadata import entry_points

from chunkbridge.kit import Dialect, Translator

__all__ = ["ENTRY_POINT_GROUP", "Registry", "UnknownDialect", "get_dialect", "registry"]

ENTRY_POINT_GROUP = "chunkbridge.dialects"


class UnknownDialect(LookupError):
    """No usable dialect of that name is registered (the message says what is)."""


@dataclass(frozen=True, slots=True)
class Registry:
    #: Usable dialects by name, sorted by name.
    dialects: dict[str, Dialect] = field(default_factory=dict)
    #: Entry points that could not be used, by name: why.
    broken: dict[str, str] = field(default_factory=dict)

    def get(self, name: str) -> Dialect:
        dialect = self.dialects.get(name)
        if dialect is not None:
            return dialect
        if name in self.broken:
            raise UnknownDialect(f"dialect {name!r} could not be loaded: {self.broken[name]}")
        names = ", ".join(self.dialects) or "none (is chunkbridge installed? pip install .)"
        raise UnknownDialect(f"unknown dialect {name!r} (available: {names})")


def _load(value: str, loaded: object, name: str) -> Dialect:
    if isinstance(loaded, type) and issubclass(loaded, Translator):
        raise TypeError(
            f"{value} is a Translator class; register a chunkbridge.kit.Dialect that names it "
            "and describes the upstream (docs/writing-a-dialect.md)"
        )
    if not isinstance(loaded, Dialect):
        raise TypeError(f"{value} is a {type(loaded).__name__}, not a chunkbridge.kit.Dialect")
    if loaded.name != name:
        raise ValueError(f"{value} is named {loaded.name!r}, registered as {name!r}")
    return loaded


@cache
def registry() -> Registry:
    """Every registered dialect (read once per process)."""
    found: dict[str, Dialect] = {}
    broken: dict[str, str] = {}
    for entry in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        if entry.name in found or entry.name in broken:
            broken[entry.name] = "registered by more than one package"
            found.pop(entry.name, None)
            continue
        try:
            found[entry.name] = _load(entry.value, entry.load(), entry.name)
        except Exception as exc:  # a third-party package's import error, or a wrong object
            broken[entry.name] = f"{type(exc).__name__}: {exc}"
    return Registry(found, broken)


def get_dialect(name: str) -> Dialect:
    return registry().get(name)
