"""The two comparison servers the benchmark owns (baseline webhook, plain-SDK MCP)."""
