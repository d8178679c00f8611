"""The dialect registry: entry points only; a broken one is named, the rest still work."""

from __future__ import annotations

from collections.abc import Iterator
from importlib.metadata import EntryPoint
from typing import Any

import pytest

import chunkbridge.gateway.registry as dialects_module
from chunkbridge.gateway.registry import ENTRY_POINT_GROUP, UnknownDialect, get_dialect, registry

BUILT_IN = "chunkbridge.translators.dialects.agent_ops_v2:DIALECT"


@pytest.fixture
def entry_points(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[EntryPoint]]:
    """Replace the installed entry points with the test's list."""
    found: list[EntryPoint] = []

    def fake(*, group: str) -> list[EntryPoint]:
        assert group == ENTRY_POINT_GROUP
        return found

    monkeypatch.setattr(dialects_module, "entry_points", fake)
    registry.cache_clear()
    yield found
    registry.cache_clear()


def add(found: list[EntryPoint], name: str, value: str) -> None:
    found.append(EntryPoint(name, value, ENTRY_POINT_GROUP))


def test_the_built_in_dialects_register_through_the_entry_point_group() -> None:
    registry.cache_clear()
    names = set(registry().dialects)
    assert {"agent-ops-v2", "open-harness", "openai-chat"} <= names
    assert registry().broken == {}
    assert get_dialect("agent-ops-v2").name == "agent-ops-v2"


def test_a_broken_entry_point_is_reported_by_name_and_does_not_take_others_down(
    entry_points: list[EntryPoint],
) -> None:
    add(entry_points, "agent-ops-v2", BUILT_IN)
    add(entry_points, "missing", "no_such_package_xyz.dialect:DIALECT")
    reg = registry()
    assert list(reg.dialects) == ["agent-ops-v2"]
    assert reg.broken["missing"].startswith("ModuleNotFoundError")
    with pytest.raises(UnknownDialect, match="'missing' could not be loaded: ModuleNotFoundError"):
        reg.get("missing")
    with pytest.raises(UnknownDialect, match=r"unknown dialect 'nope' \(available: agent-ops-v2\)"):
        reg.get("nope")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("chunkbridge.kit:Translator", "is a Translator class; register a chunkbridge.kit.Dialect"),
        ("chunkbridge.kit:TurnInput", "not a chunkbridge.kit.Dialect"),
        (BUILT_IN, "is named 'agent-ops-v2', registered as 'renamed'"),
    ],
)
def test_what_an_entry_point_must_name_is_explained(
    entry_points: list[EntryPoint], value: str, message: str
) -> None:
    add(entry_points, "renamed", value)
    reg = registry()
    assert reg.dialects == {} and message in reg.broken["renamed"]


def test_a_name_registered_twice_is_refused_rather_than_picked_at_random(
    entry_points: list[EntryPoint],
) -> None:
    add(entry_points, "agent-ops-v2", BUILT_IN)
    add(entry_points, "agent-ops-v2", BUILT_IN)
    reg = registry()
    assert reg.dialects == {}
    assert reg.broken == {"agent-ops-v2": "registered by more than one package"}


def test_with_nothing_registered_the_error_says_how_to_install(
    entry_points: list[Any],
) -> None:
    with pytest.raises(UnknownDialect, match="none \\(is chunkbridge installed"):
        get_dialect("agent-ops-v2")
