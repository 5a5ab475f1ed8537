"""One module per node of the MemGPT loop, named as in the graph."""

from langgraph_memgpt.nodes.call_memory_tool import make_call_memory_tool
from langgraph_memgpt.nodes.check_pressure import make_check_pressure
from langgraph_memgpt.nodes.close_step import make_close_step
from langgraph_memgpt.nodes.open_turn import make_open_turn
from langgraph_memgpt.nodes.respond import make_respond
from langgraph_memgpt.nodes.summarize_evict import make_summarize_evict
from langgraph_memgpt.nodes.think import make_think

__all__ = [
    "make_call_memory_tool",
    "make_check_pressure",
    "make_close_step",
    "make_open_turn",
    "make_respond",
    "make_summarize_evict",
    "make_think",
]
