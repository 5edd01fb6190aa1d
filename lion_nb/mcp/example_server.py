"""A small MCP server for tutorial 14, written with the SDK's own server API.

``python -m lion_nb.mcp.example_server`` serves a notebook of notes over stdio: tools to add,
list and clear notes, a resource with every note, and a prompt. The notes live in memory,
for as long as the server runs.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("notes")
NOTES: list[str] = []


@server.tool()
def add_note(text: str) -> str:
    """Add a note to the notebook of notes."""
    NOTES.append(text)
    return f"note {len(NOTES)} added"


@server.tool()
def list_notes() -> str:
    """Every note, one a line."""
    return "\n".join(f"{i}. {n}" for i, n in enumerate(NOTES, 1)) or "no notes yet"


@server.tool()
def clear_notes() -> str:
    """Delete every note."""
    NOTES.clear()
    return "all notes deleted"


@server.resource("notes://all")
def all_notes() -> str:
    """Every note, one a line."""
    return list_notes()


@server.prompt()
def summarize_notes(style: str) -> str:
    """Ask for a summary of the notes."""
    return f"Summarize my notes in a {style} style."


if __name__ == "__main__":
    server.run()
