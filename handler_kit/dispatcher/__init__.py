"""The reference dispatcher: the runtime side of the Runbear hooks contract, for tests.

>>> async with Dispatcher(document, mcp_servers={"ctx": "https://.../mcp"}) as dispatcher:
...     outcome = await dispatcher.dispatch({"hook_event_name": "PreToolUse", ...})
...     print(outcome.to_json_line())
"""

from handler_kit.dispatcher.core import MAX_CONCURRENT_HANDLERS, Dispatcher, ssl_context
from handler_kit.dispatcher.outcome import HandlerReport, Outcome
from handler_kit.dispatcher.thread import Thread
from handler_kit.runbear.document import DocumentError

__all__ = [
    "MAX_CONCURRENT_HANDLERS",
    "Dispatcher",
    "DocumentError",
    "HandlerReport",
    "Outcome",
    "Thread",
    "ssl_context",
]
