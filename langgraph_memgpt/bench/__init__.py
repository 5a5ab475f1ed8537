"""Benchmarks of the memory system on public data (LoCoMo turn retrieval).

The benchmark drives the same code path the agent's memory tools use
(``RecallMemory.search``), so its figures are what the agent actually gets.
"""
