"""The version of handler-kit: one place, read by the package, the wheel and the MCP server."""

__version__ = "0.2.0"
