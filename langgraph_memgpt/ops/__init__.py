"""Operations on an agent's memory outside a turn.

``forget``, ``redaction``, ``transfer`` (export / import) and ``export_file``, ``ingest``,
``retention``, ``recovery``.
"""
