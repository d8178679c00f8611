"""The distribution as users get it: one import name, ``chunkbridge``, from a wheel.

The repository keeps a folder per part (``gateway/``, ``translators/``, ``protocol_specs/``) and
pyproject's package directories map them under ``chunkbridge``; a module missing from the
package list, a stray top-level name or a data file left out only shows in a real wheel,
installed on its own. The wheel is built without network (``--no-build-isolation``, the dev
environment's setuptools) and installed into a fresh venv that borrows the dev environment's
third-party packages through a ``.pth`` line (no download), then used from a directory outside
the repository, where the folders themselves cannot be imported.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from tests.conftest import package_files

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str | Path, cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    built = _run(
        sys.executable,
        *("-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", out, ROOT),
        cwd=out,
    )
    assert built.returncode == 0, built.stderr
    (found,) = out.glob("chunkbridge-*.whl")
    return found


@pytest.fixture(scope="module")
def fresh_python(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new venv with only the wheel installed (its dependencies borrowed, not downloaded)."""
    home = tmp_path_factory.mktemp("venv")
    venv.EnvBuilder(with_pip=True).create(home)
    python = home / "bin" / "python"
    site = _run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))", cwd=home)
    borrowed = [p for p in sys.path if p.endswith("site-packages")]
    Path(site.stdout.strip(), "dev-dependencies.pth").write_text("\n".join(borrowed) + "\n")
    installed = _run(
        python, "-m", "pip", "install", "--no-deps", "--no-index", "-q", wheel, cwd=home
    )
    assert installed.returncode == 0, installed.stderr
    return python


def test_the_wheel_holds_every_module_under_one_name(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    tops = {n.split("/")[0] for n in names if not n.startswith("chunkbridge-")}
    assert tops == {"chunkbridge"}
    expected = {"chunkbridge/py.typed", *package_files()}
    expected.add("chunkbridge/gateway/devtools/static/demo.html")
    assert expected <= names, sorted(expected - names)


def test_only_chunkbridge_is_importable_from_the_wheel(fresh_python: Path, tmp_path: Path) -> None:
    for name in ("gateway", "translators", "protocol_specs"):
        result = _run(fresh_python, "-c", f"import {name}", cwd=tmp_path)
        assert result.returncode != 0 and "ModuleNotFoundError" in result.stderr, name
    script = (
        "from chunkbridge.kit import Translator, Dialect, TurnInput\n"
        "import chunkbridge, chunkbridge.gateway.http.app, chunkbridge.gateway.devtools.demo\n"
        "from importlib.metadata import entry_points\n"
        "names = sorted(e.load().name for e in entry_points(group='chunkbridge.dialects'))\n"
        "print(chunkbridge.__version__, chunkbridge.__file__, ' '.join(names))\n"
    )
    result = _run(fresh_python, "-c", script, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    version, location, *dialects = result.stdout.split()
    assert version != "0+unknown"
    assert str(ROOT) not in location  # the wheel's copy, not the repository's
    assert dialects == [
        "ag-ui",
        "agent-ops-v2",
        "anthropic-messages",
        "gemini",
        "langgraph",
        "open-harness",
        "openai-agents",
        "openai-chat",
        "openai-responses",
        "pi-agent",
        "pydantic-ai",
    ]
    cli = _run(fresh_python.parent / "chunkbridge", "dialects", cwd=tmp_path)
    assert cli.returncode == 0 and "anthropic-messages" in cli.stdout, cli.stderr


def test_the_toy_dialects_use_only_the_public_kit() -> None:
    """A third-party dialect needs nothing but ``chunkbridge.kit`` (and the wire vocabularies
    it documents itself): the toy dialects registered through entry points in the tests prove
    it by importing nothing else of chunkbridge."""
    for path in (ROOT / "tests" / "toy_dialects").glob("*.py"):
        tree = ast.parse(path.read_text())
        imported = {
            node.module
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module and "chunkbridge" in node.module
        }
        imported |= {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
            if "chunkbridge" in alias.name
        }
        assert imported == {"chunkbridge.kit"}, (path.name, imported)


#: The libraries of the in-process dialects (optional extras), by import name.
LIBRARIES = ("pydantic_ai", "agents", "langgraph", "langchain_core", "openai", "anthropic")


def test_importing_chunkbridge_and_every_dialect_imports_no_optional_library(
    tmp_path: Path,
) -> None:
    """Every dialect loads (as the registry does at start-up) without its library: the
    libraries are installed here, so an import of one would succeed and show."""
    script = (
        "import sys, chunkbridge, chunkbridge.kit, chunkbridge.gateway.http.app\n"
        "from chunkbridge.gateway.registry import registry\n"
        "found = registry()\n"
        "assert not found.broken, found.broken\n"
        "for name in ('pydantic-ai', 'openai-agents', 'langgraph'):\n"
        "    found.get(name).translator(None)\n"
        f"print(' '.join(m for m in {LIBRARIES!r} if m in sys.modules))\n"
    )
    result = _run(sys.executable, "-c", script, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == []
    for library in LIBRARIES[:4]:  # (and they are there to be imported)
        check = _run(sys.executable, "-c", f"import {library}", cwd=tmp_path)
        assert check.returncode == 0, (library, check.stderr)
