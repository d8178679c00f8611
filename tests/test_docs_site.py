"""The documentation site (mkdocs.yml, docs/) builds with ``mkdocs build --strict``: a link to a
missing page or anchor, a page left out of the nav or a docstring mkdocstrings cannot render
fails the suite. Every public name — ``chunkbridge.__all__``, the dialect kit's ``__all__``, and
the public methods and properties of their classes — has a docstring and a place in the API
reference. The README's links lead to files that exist."""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import chunkbridge
import chunkbridge.kit
from tests.conftest import require

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
BUILD_TIMEOUT = 120  # seconds; the build takes a few


def _missing_site_tools() -> str | None:
    """Why the site cannot be built here (pyproject's dev extra has its tools), or None."""
    missing = []
    for name in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python"):
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            missing.append(name)
    return f"{', '.join(missing)} not installed (make install)" if missing else None


def _build(site: Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict`` of the site in ``cwd`` into ``site``."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # Material's banner about MkDocs 2.0
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
        check=False,
    )


def _public() -> list[str]:
    return [name for name in chunkbridge.__all__ if not name.startswith("__")]


def test_the_site_builds_strict(tmp_path: Path) -> None:
    require("mkdocs", _missing_site_tools())
    site = tmp_path / "site"
    built = _build(site)
    assert built.returncode == 0, built.stdout + built.stderr
    reference = (site / "reference" / "api" / "index.html").read_text()
    for name in _public():  # each public name is rendered where the reference says
        assert f'id="chunkbridge.{name}"' in reference, name
    assert (site / "demo-trace.png").is_file()  # the picture docs/operations.md shows
    assert not list(site.rglob("*.py"))  # the griffe extension is not published


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    """--strict with mkdocs.yml's validation: a link to an anchor a page does not have, and one
    to a page that does not exist, each fail the build (the other test proves none is there)."""
    require("mkdocs", _missing_site_tools())
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text(
        "# Home\n\n[a](other.md#no-such-anchor) [b](missing.md)\n\n## Here\n"
    )
    (docs / "other.md").write_text("# Other\n")
    config = (ROOT / "mkdocs.yml").read_text()
    nav = re.search(r"(?ms)^nav:\n.*?(?=^\S)", config)
    assert nav is not None
    config = config.replace(nav.group(0), "nav: [index.md, other.md]\n")
    config = config.replace("docs/griffe_rst.py", str(DOCS / "griffe_rst.py"))
    (tmp_path / "mkdocs.yml").write_text(config)
    built = _build(tmp_path / "site", cwd=tmp_path)
    assert built.returncode != 0
    assert "does not contain an anchor '#no-such-anchor'" in built.stderr
    assert "'missing.md', but the target is not found" in built.stderr


def test_every_public_name_is_in_the_reference() -> None:
    page = (DOCS / "reference" / "api.md").read_text()
    shown = re.findall(r"(?m)^::: chunkbridge\.(\w+)$", page)
    assert sorted(shown) == sorted(_public())
    kit = (DOCS / "reference" / "kit.md").read_text()
    assert re.search(r"(?m)^::: chunkbridge\.kit$", kit)  # its __all__, every name


def _undocumented(module: ModuleType) -> list[str]:
    """The names of ``module.__all__`` without a docstring of their own: functions, classes and
    each public method and property a class defines (not what it inherits from Starlette or
    pydantic). Constants and type aliases are documented beside their definition."""
    missing: list[str] = []
    for name in module.__all__:
        value = getattr(module, name)
        if inspect.isfunction(value) and not (value.__doc__ or "").strip():
            missing.append(name)
        if not inspect.isclass(value):
            continue
        doc = (value.__dict__.get("__doc__") or "").strip()
        if not doc or (dataclasses.is_dataclass(value) and doc.startswith(f"{name}(")):
            missing.append(name)  # (a dataclass without one gets its signature as __doc__)
        for attr, member in vars(value).items():
            if attr.startswith("_"):
                continue
            function: Any = member
            if isinstance(member, staticmethod | classmethod):
                function = member.__func__
            if inspect.isfunction(function) or isinstance(function, property):
                if not (function.__doc__ or "").strip():
                    missing.append(f"{name}.{attr}")
    return missing


@pytest.mark.parametrize("module", [chunkbridge, chunkbridge.kit], ids=lambda m: m.__name__)
def test_every_public_name_has_a_docstring(module: ModuleType) -> None:
    assert _undocumented(module) == []


def test_the_check_sees_a_missing_docstring() -> None:
    """The docstring check itself: an undocumented class, method and function are named."""

    class Documented:
        """Has one."""

        def method(self) -> None:
            """Has one."""

    class Bare:
        def method(self) -> None:
            pass

    def bare() -> None:
        pass

    @dataclasses.dataclass
    class Record:
        field: int

    fake = ModuleType("fake")
    names = {"Documented": Documented, "Bare": Bare, "bare": bare, "Record": Record}
    for name, value in {**names, "__all__": list(names)}.items():
        setattr(fake, name, value)
    assert _undocumented(fake) == ["Bare", "Bare.method", "bare", "Record"]


def test_the_readmes_links_lead_to_files() -> None:
    """The README's relative links (into docs/, which GitHub shows as it shows the README)."""
    readme = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\(([^)\s]+)\)", readme)
    local = [link for link in links if "://" not in link and not link.startswith("#")]
    assert local, "the README links into docs/"
    for link in local:
        assert (ROOT / link.split("#", 1)[0]).is_file(), link
    nav = (ROOT / "mkdocs.yml").read_text()
    for link in local:  # each page it names is on the site too
        if link.startswith("docs/") and link.endswith(".md"):
            assert link.removeprefix("docs/") in nav, link
