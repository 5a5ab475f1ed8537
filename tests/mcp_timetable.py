"""A tiny MCP server over stdio, started by the composition tests (``python mcp_timetable.py``).

It answers from a fixed timetable, so a test can check the agent read the server's answer.
"""

from __future__ import annotations

from mcp.server.fastmcp import FastMCP

TIMETABLE = {"AF12": "Paris 09:40, gate B12", "LH7": "Frankfurt 13:05, gate A3"}

server = FastMCP("timetable")


@server.tool()
def departure(flight: str) -> str:
    """When and where a flight leaves, by its code (e.g. AF12)."""
    return TIMETABLE.get(flight.upper(), f"no flight {flight!r} in the timetable")


if __name__ == "__main__":
    server.run(transport="stdio")
