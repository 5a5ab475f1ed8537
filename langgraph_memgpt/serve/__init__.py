"""Serving the agent.

The served graph (``server``), its settings (``settings``), example auth (``auth``), the
memory page (``web``) and the embedded model's warm-up (``warmup``). The ``serve`` command
that starts ``langgraph dev`` is ``cli.dev_server``.
"""
