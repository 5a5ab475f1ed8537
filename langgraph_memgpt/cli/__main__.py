"""``python -m langgraph_memgpt.cli``: the ``langgraph-memgpt`` command."""

import sys

from langgraph_memgpt.cli import main

sys.exit(main())
