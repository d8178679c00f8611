"""``python -m gateway`` delegates to the CLI."""

import sys

from gateway.cli import main

sys.exit(main())
