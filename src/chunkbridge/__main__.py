"""``python -m chunkbridge`` delegates to the CLI."""

import sys

from chunkbridge.gateway.cli import main

sys.exit(main())
