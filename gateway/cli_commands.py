"""Subcommands beyond ``validate``: registered here so :mod:`gateway.cli` stays small."""

from __future__ import annotations

import argparse
from collections.abc import Callable

__all__ = ["register"]


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    add_target: Callable[[argparse.ArgumentParser], None],
) -> None:
    """Add the remaining subcommands to ``sub``."""
