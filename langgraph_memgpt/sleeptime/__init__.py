"""Sleep-time consolidation: a second graph that tends an agent's memory between turns.

`build_sleeptime_graph` returns it uncompiled (mount it in a parent graph, or compile it
with your own persistence); ``langgraph.json`` serves it as ``memgpt_sleeptime``
(`langgraph_memgpt.sleeptime.server`). See docs/operations/sleep-time.md.
"""

from langgraph_memgpt.sleeptime.graph import GRAPH_ID, build_sleeptime_graph
from langgraph_memgpt.sleeptime.state import ACTOR, WATERMARK, SleepInput, SleepState

__all__ = ["ACTOR", "GRAPH_ID", "WATERMARK", "SleepInput", "SleepState", "build_sleeptime_graph"]
