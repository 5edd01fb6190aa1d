"""Fixtures of the MCP tests: the fake MCP server as a real process."""

from tests.fakes.mcp_fixtures import mcp_command, mcp_http, mcp_log

__all__ = ["mcp_command", "mcp_http", "mcp_log"]
