"""The core: hook inputs, outputs, matchers, the merge, and the one path that answers an event.

Everything else in handler-kit is built on this package and nothing here imports anything else
of handler-kit: a command hook, which starts once per tool call, loads only this.
"""
