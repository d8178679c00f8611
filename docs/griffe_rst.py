"""A griffe extension for the documentation site: the package's docstrings are written in reST's
inline style (``:class:`~chunkbridge.Gateway```, ``text::`` before a literal block), which
mkdocstrings renders as Markdown. A role becomes a cross-reference to the object when the site
documents it and plain code when it does not (an ``optional`` autoref never fails the build);
``::`` ending a paragraph becomes ``:`` (the indented block after it is already Markdown code).
Loaded by mkdocs.yml's mkdocstrings options; nothing in the package imports it."""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|mod|data|exc|obj|const):`(~?)([\w.]+)(\(\))?`")
LITERAL = re.compile(r"(?m)(\S)::$")
BARE_LITERAL = re.compile(r"(?m)^\s*::$\n?")


def _target(obj: griffe.Object, name: str) -> str:
    """The dotted path a role names: as written when it is qualified, else beside ``obj``."""
    if "." in name and name.split(".", 1)[0] in {"chunkbridge", "starlette", "pydantic"}:
        return name
    home = obj if obj.is_class or obj.is_module else obj.parent
    return f"{home.path}.{name}" if home is not None else name


def rewrite(text: str, obj: griffe.Object) -> str:
    """``text`` with its roles as optional cross-references and its ``::`` as ``:``."""

    def role(match: re.Match[str]) -> str:
        short, name, call = match.group(1), match.group(2), match.group(3) or ""
        shown = name.rsplit(".", 1)[-1] if short else name
        return (
            f'<autoref identifier="{_target(obj, name)}" optional>'
            f"<code>{shown}{call}</code></autoref>"
        )

    text = ROLE.sub(role, text)
    text = BARE_LITERAL.sub("", text)
    return LITERAL.sub(r"\1:", text)


class RestInline(griffe.Extension):
    """Rewrites every loaded object's docstring once (see the module's docstring)."""

    def on_instance(self, *, node: Any, obj: griffe.Object, agent: Any, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = rewrite(obj.docstring.value, obj)
