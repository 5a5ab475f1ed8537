"""langgraph-memgpt: MemGPT's tiered memory as a LangGraph state graph."""

from langgraph_memgpt.context import Context
from langgraph_memgpt.graph import build_graph
from langgraph_memgpt.memory_tools import memory_prompt, memory_tools, recorder
from langgraph_memgpt.state import InputState, OutputState, State
from langgraph_memgpt.tool_facts import ToolFacts, declare_tool

__all__ = [
    "Context",
    "InputState",
    "OutputState",
    "State",
    "ToolFacts",
    "build_graph",
    "declare_tool",
    "memory_prompt",
    "memory_tools",
    "recorder",
]
