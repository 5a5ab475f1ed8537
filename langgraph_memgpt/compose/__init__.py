"""MemGPT's memory inside other LangGraph and LangChain agents.

``middleware`` (``MemGPTMiddleware`` for ``create_agent``) and ``store`` (``MemGPTStore``,
a ``BaseStore`` view).
"""
