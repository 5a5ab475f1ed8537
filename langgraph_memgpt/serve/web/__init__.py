"""The memory page: what an agent knows, served beside the graph by ``langgraph dev``.

``langgraph.json`` mounts `app` (``"http": {"app": "langgraph_memgpt.serve.web:app"}``): the
page at ``/memory`` and the JSON it reads at ``/memory/api/...``. See
`langgraph_memgpt.serve.web.app`.
"""

from langgraph_memgpt.serve.web.app import app, build_app

__all__ = ["app", "build_app"]
