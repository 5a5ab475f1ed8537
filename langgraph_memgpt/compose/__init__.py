"""MemGPT's memory inside other LangGraph and LangChain agents.

``middleware`` (``MemGPTMiddleware`` for ``create_agent``), ``store`` (``MemGPTStore``,
a ``BaseStore`` view) and ``tools`` (the memory tools, prompt and recorder for an agent of
yours).
"""
