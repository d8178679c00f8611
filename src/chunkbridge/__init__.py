"""chunkbridge: agent backends and model providers in, Vercel AI SDK UI message streams out.

One import name, four parts (each a top-level folder of the repository, mapped here by
``pyproject.toml``'s package directories):

* :mod:`chunkbridge.kit` — the public dialect API (``translators/kit/``): what a dialect,
  built-in or third-party, imports to describe and translate its upstream;
* :mod:`chunkbridge.translators` — the sans-I/O stream core and the built-in dialects;
* :mod:`chunkbridge.protocol_specs` — the wire vocabularies, as types and tables;
* :mod:`chunkbridge.gateway` — the I/O shell: HTTP and WebSocket serving, upstream transports,
  resume stores, the command line.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("chunkbridge")
except PackageNotFoundError:  # pragma: no cover - running from a tree that is not installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
