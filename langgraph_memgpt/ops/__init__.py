"""Operations on an agent's memory outside a turn.

``forget`` (and ``dev_state``: ``langgraph dev``'s saved runs and threads, scrubbed by it),
``transfer`` (export / import) and ``export_file``, ``ingest``, ``retention``, ``recovery``.
"""
