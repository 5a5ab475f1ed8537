"""Serving the agent.

The served graph (``server``), its settings (``settings``), example auth (``auth``), the
memory page (``web``), ``langgraph dev`` started and its saved state (``dev_server``,
``dev_state``) and the embedded model's warm-up (``warmup``).
"""
