"""A HookApp run as a command hook: one hook input on stdin, the answer on stdout."""

from handler_kit.command.hook import main, run

__all__ = ["main", "run"]
