"""The memory tools.

Their registry and run (``run``), the LangChain tools (``memory_tools``), what the model may
pass (``args``), what the loop knows of a tool (``facts``) and which files a tool,
``ingest`` or the watcher may read (``file_rules``).
"""
