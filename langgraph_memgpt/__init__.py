"""langgraph-memgpt: MemGPT's tiered memory as a LangGraph state graph."""

from langgraph_memgpt.context import Context
from langgraph_memgpt.graph import build_graph
from langgraph_memgpt.state import InputState, OutputState, State

__all__ = ["Context", "InputState", "OutputState", "State", "build_graph"]
