"""``handler-kit dispatch`` runs against the dispatcher tests' scripted endpoint and MCP server:
their fixtures are shared from tests/dispatcher/conftest.py rather than restated."""

from tests.dispatcher.conftest import (  # noqa: F401 (fixtures, found by name)
    dispatch_tls,
    dispatcher_for,
    mcp_test_server,
    script_server,
    scripted,
)
