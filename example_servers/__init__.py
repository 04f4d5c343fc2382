"""Example hook servers built with handler-kit; each is runnable and contract-tested."""
