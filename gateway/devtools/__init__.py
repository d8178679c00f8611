"""Tools for developing against the gateway, never on the serving path (an import-linter
contract): the demo's page and fake upstreams, recording, replay and golden files, the pytest
plugin. The command line (:mod:`chunkbridge.gateway.cli`) and tests import them."""
