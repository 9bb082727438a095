"""A small MCP server for notebook 15, written with the mcp SDK's server API.

``python mcp_server.py`` speaks MCP on stdio with two tools; ``--tools N`` adds N catalogue
tools (``lookup_0`` ... ``lookup_{N-1}``), to measure what a server's tool specs cost
against their number.
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("notes")
NOTES = {"mcp": "MCP servers offer tools; every spec is resent with every model call."}


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def read_note(topic: str) -> str:
    """Read the note kept on a topic."""
    return NOTES.get(topic, f"no note on {topic!r}")


def _catalogue(n: int) -> None:
    for i in range(n):

        def lookup(query: str, limit: int = 10) -> str:
            return f"{query}:{limit}"

        server.tool(
            name=f"lookup_{i}", description=f"Look up records of kind {i} matching a query."
        )(lookup)


if __name__ == "__main__":
    argv = sys.argv[1:]
    if "--tools" in argv:
        _catalogue(int(argv[argv.index("--tools") + 1]))
    server.run()
