"""``python -m benchmarks.bench locomo --data FILE ...`` (from the repository's root)."""

import sys

from .cli import main

sys.exit(main())
