"""The reference dispatcher: what Runbear does with a hooks document when an event fires.

For one event it finds the handlers whose matcher applies (SessionStart matches ``startup``;
UserPromptSubmit and Stop ignore matchers), runs them concurrently, at most 4 at a time and each
to completion within its timeout (5 s on SessionStart, 3 s elsewhere, at most 10 s), reads every
answer (``http_call.py``, ``mcp_call.py``), merges them with the shared
:func:`handler_kit.core.merge.merge` in the ``runbear`` dialect, and applies the thread rules
(``thread.py``). The result is an :class:`~handler_kit.dispatcher.outcome.Outcome`.

It exists so users can check, before an agent ever calls them, what the runtime will make of
their document and their servers' answers: same rules, real HTTP, real MCP.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import logging
import ssl
import time
from collections.abc import Iterable, Mapping
from typing import Any

import httpx

from handler_kit.core.events import RUNBEAR_EVENTS
from handler_kit.core.matchers import compile_matcher
from handler_kit.core.merge import Failure, merge
from handler_kit.core.outputs import Output
from handler_kit.dispatcher.http_call import Resolver, call_http, resolve_host
from handler_kit.dispatcher.mcp_call import McpServer, call_mcp_tool, load_client
from handler_kit.dispatcher.outcome import HandlerReport, Outcome
from handler_kit.dispatcher.thread import Thread
from handler_kit.runbear.document import (
    FAIL_CLOSED_EVENTS,
    HooksDocument,
    HttpHandler,
    McpToolHandler,
    parse_document,
    timeout_for,
)

logger = logging.getLogger("handler_kit.dispatcher")

MAX_CONCURRENT_HANDLERS = 4
SESSION_START_SOURCE = "startup"  # how every Runbear session starts
UNMATCHED_EVENTS = frozenset({"UserPromptSubmit", "Stop"})  # a matcher there is ignored


@functools.lru_cache(maxsize=16)
def ssl_context(ca_file: str | None = None) -> ssl.SSLContext:
    """The default trust (certifi, as httpx uses) plus ``ca_file``: a test CA, e.g. trustme's.

    Cached: loading the default trust store is slow, and a test suite builds many
    dispatchers. The context is never modified after it is built, so sharing it is safe.
    """
    import certifi

    context = ssl.create_default_context(cafile=certifi.where())
    if ca_file:
        context.load_verify_locations(cafile=ca_file)
    return context


class Dispatcher:
    """Runs a hooks document's handlers for events, exactly as Runbear would.

    ``document``: the hooks document (a dict as PUT takes it, or a :class:`HooksDocument`);
    it is validated, with ``mcp_servers`` as the agent's known Custom MCP servers, and an invalid
    one raises :class:`~handler_kit.runbear.document.DocumentError` carrying PUT's error body.
    ``mcp_servers``: server name -> Streamable HTTP URL; ``mcp_headers``: server name ->
    headers for it (an ``Authorization``...). ``allow_private`` lets http handlers call private
    and loopback addresses and plain ``http://`` URLs (local tests only: Runbear refuses both).
    ``ca_file``: a PEM CA bundle trusted in addition to the default one (test certificates).
    ``http_client``: an ``httpx.AsyncClient`` to use for http handlers (not closed here; it must
    not follow redirects). ``resolver``: ``async (host, port) -> [addresses]`` used for the
    public-address check (tests stand in a DNS answer with it).

    Use ``async with Dispatcher(...) as d`` (or ``await d.aclose()``), or :meth:`dispatch_sync`
    from synchronous code.
    """

    def __init__(
        self,
        document: HooksDocument | Mapping[str, Any],
        *,
        mcp_servers: Mapping[str, str] | None = None,
        mcp_headers: Mapping[str, Mapping[str, str]] | None = None,
        allow_private: bool = False,
        ca_file: str | None = None,
        http_client: httpx.AsyncClient | None = None,
        resolver: Resolver | None = None,
    ) -> None:
        servers = dict(mcp_servers or {})
        if isinstance(document, HooksDocument):
            document = document.to_json()
        self.document = parse_document(
            document, known_mcp_servers=servers, allow_http=allow_private
        )
        self.allow_private = allow_private
        self.ca_file = ca_file
        self.threads: dict[str, Thread] = {}
        # What the dispatcher is wired to, for the reader's convenience (the pytest fixture
        # sets the running server here).
        self.server: Any = None
        self._resolver = resolver or resolve_host
        self._verify: ssl.SSLContext | None = None
        self._given_client = http_client
        self._http: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.mcp = {
            name: McpServer(
                name, url, headers=dict((mcp_headers or {}).get(name, {})), verify=self.verify
            )
            for name, url in servers.items()
        }
        self._matchers = {
            id(group): compile_matcher(None if event in UNMATCHED_EVENTS else group.matcher)
            for event, groups in self.document.hooks.items()
            for group in groups
        }

    @property
    def verify(self) -> ssl.SSLContext:
        if self._verify is None:
            self._verify = ssl_context(self.ca_file)
        return self._verify

    # -- lifecycle ----------------------------------------------------------------------------

    async def __aenter__(self) -> Dispatcher:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP clients this dispatcher opened (a given ``http_client`` is not)."""
        client, self._http = self._http, None
        if client is not None:
            await client.aclose()
        for server in self.mcp.values():
            await server.aclose()
        self._loop = None

    def _bind_loop(self) -> None:
        """Clients belong to the loop they were opened on: start fresh on a new loop (each
        :meth:`dispatch_sync` call, or ``asyncio.run`` per test)."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._loop = loop
            self._http = None
            for server in self.mcp.values():
                server.forget_loop()

    def _http_client(self) -> httpx.AsyncClient:
        if self._given_client is not None:
            return self._given_client
        if self._http is None:
            self._http = httpx.AsyncClient(
                verify=self.verify,
                follow_redirects=False,
                timeout=httpx.Timeout(30.0),
                trust_env=False,
            )
        return self._http

    # -- dispatching --------------------------------------------------------------------------

    def thread_for(self, event: Mapping[str, Any]) -> Thread:
        """The dispatcher-kept thread of an event (by ``thread_id``, else ``session_id``)."""
        key = event.get("thread_id") or event.get("session_id") or ""
        thread = self.threads.get(key)
        if thread is None:
            thread = self.threads[key] = Thread(thread_id=key or None)
        return thread

    def dispatch_sync(self, event: Mapping[str, Any], thread: Thread | None = None) -> Outcome:
        """:meth:`dispatch` from synchronous code (a test): its own event loop, clients
        opened and closed around the call."""

        async def run() -> Outcome:
            try:
                return await self.dispatch(event, thread)
            finally:
                await self.aclose()

        return asyncio.run(run())

    async def dispatch(self, event: Mapping[str, Any], thread: Thread | None = None) -> Outcome:
        """Run ``event`` through the document; ``thread`` defaults to the dispatcher's own
        thread for the event's ``thread_id``. Raises ``ValueError`` for an input that is not one
        of Runbear's five events; never for a handler's behaviour."""
        if not isinstance(event, Mapping):
            raise ValueError("a hook input must be a JSON object")
        name = event.get("hook_event_name")
        if name not in RUNBEAR_EVENTS:
            raise ValueError(
                f"hook_event_name {name!r} is not one of Runbear's events: "
                f"{', '.join(RUNBEAR_EVENTS)}"
            )
        self._bind_loop()
        if thread is None:
            thread = self.thread_for(event)
        payload = copy.deepcopy(dict(event))
        entries = self.document.handlers(name)
        outcome = Outcome(event=name, input=payload)

        continuation = False
        turn = thread.turn_of(payload)
        if name == "Stop":
            continuation = thread.is_continuation(turn) or payload.get("stop_hook_active") is True
            payload["stop_hook_active"] = continuation

        run_rules = not (name == "SessionStart" and thread.session_started)
        value = self._matcher_value(name, payload)
        reports: list[HandlerReport] = []
        jobs: list[tuple[HandlerReport, HttpHandler | McpToolHandler]] = []
        for index, (group, handler) in enumerate(entries):
            report = HandlerReport(
                index=index,
                type=handler.type,
                status="skipped",
                fail_closed=handler.fail_closed and name in FAIL_CLOSED_EVENTS,
            )
            reports.append(report)
            if run_rules and self._matchers[id(group)](value):
                jobs.append((report, handler))
        outcome.handlers = reports
        if name == "SessionStart":
            thread.session_started = True

        if jobs:
            self._prepare(handler for _, handler in jobs)
            limit = asyncio.Semaphore(MAX_CONCURRENT_HANDLERS)
            await asyncio.gather(
                *(self._run_one(limit, report, handler, name, payload) for report, handler in jobs)
            )

        results: list[Output | Failure | None] = []
        for report in reports:
            if report.status == "ok":
                output = report.output
                if output is not None and continuation and output.decision == "block":
                    report.warnings.append("block ignored: stop_hook_active (continuation)")
                    output = _without_decision(output)
                results.append(output)
            elif report.status in ("failed", "timeout"):
                results.append(Failure(fail_closed=report.fail_closed))
            else:
                results.append(None)
        merged = merge(name, results, dialect="runbear")
        outcome.merged = merged
        self._read(outcome, thread, turn)
        return outcome

    def _prepare(self, handlers: Iterable[HttpHandler | McpToolHandler]) -> None:
        """What the handlers' calls need that is slow to make and holds the event loop while
        it is made (the MCP client's import, the trust store): made here, before any
        handler's clock starts, so that a handler's time counts from its own call."""
        kinds = {type(handler) for handler in handlers}
        if McpToolHandler in kinds:
            load_client()
        if HttpHandler in kinds:
            self._http_client()

    def _read(self, outcome: Outcome, thread: Thread, turn: str) -> None:
        """Apply the event's reading of the merge, and the thread rules, to the outcome."""
        merged = outcome.merged
        assert merged is not None
        name = outcome.event
        decision = merged.decision
        if name == "PreToolUse":
            decision = decision if decision in ("allow", "deny") else None
            outcome.updated_input = merged.updated_input
        elif name == "SessionStart":
            decision = None  # context-only: a block is ignored
        elif decision != "block":
            decision = None
        outcome.decision = decision
        outcome.reason = merged.reason if decision is not None else None
        contexts = list(merged.contexts)
        if name == "UserPromptSubmit":
            contexts = thread.fresh_contexts(contexts)
            if decision != "block":  # a blocked message is never sent to the model
                thread.record_injected(contexts)
        elif name == "SessionStart":
            thread.session_context.extend(contexts)
        outcome.additional_context = contexts
        if name == "Stop" and decision == "block":
            thread.continued_turns.add(turn)
            outcome.continuation = outcome.reason

    @staticmethod
    def _matcher_value(name: str, payload: dict[str, Any]) -> str | None:
        if name == "SessionStart":
            return SESSION_START_SOURCE
        if name in UNMATCHED_EVENTS:
            return None
        tool = payload.get("tool_name")
        return tool if isinstance(tool, str) else None

    async def _run_one(
        self,
        limit: asyncio.Semaphore,
        report: HandlerReport,
        handler: HttpHandler | McpToolHandler,
        name: str,
        payload: dict[str, Any],
    ) -> None:
        """Run one handler within its timeout; record its fate on ``report``."""
        timeout = timeout_for(name, handler)
        async with limit:
            started = time.perf_counter()
            try:
                async with asyncio.timeout(timeout):
                    await self._call(report, handler, name, payload)
            except TimeoutError:
                report.status = "timeout"
                report.error = f"no answer within {timeout} s"
            except Exception as exc:  # a bug here must not lose the other handlers' answers
                logger.exception("handler %d of %s crashed the dispatcher", report.index, name)
                report.status = "failed"
                report.error = f"{type(exc).__name__}: {exc}"
            report.duration_ms = (time.perf_counter() - started) * 1000
        if report.status in ("failed", "timeout"):
            logger.info("%s handler %d %s: %s", name, report.index, report.status, report.error)

    async def _call(
        self,
        report: HandlerReport,
        handler: HttpHandler | McpToolHandler,
        name: str,
        payload: dict[str, Any],
    ) -> None:
        if isinstance(handler, HttpHandler):
            result = await call_http(
                self._http_client(),
                handler.url,
                name,
                payload,
                headers=handler.headers,
                allow_private=self.allow_private,
                resolver=self._resolver,
            )
            report.http_status = result.status_code
            report.http_body = result.body
            ok, output, error = result.ok, result.output, result.error
        else:
            mcp = await call_mcp_tool(
                self.mcp[handler.server], handler.tool, handler.input, name, payload
            )
            report.warnings.extend(mcp.warnings)
            report.arguments = mcp.arguments
            ok, output, error = mcp.ok, mcp.output, mcp.error
        report.status = "ok" if ok else "failed"
        report.output = output
        report.error = error


def _without_decision(output: Output) -> Output:
    """A copy of ``output`` with its decision removed (an ignored Stop block)."""
    clone = Output()
    for slot in Output.__slots__:
        setattr(clone, slot, getattr(output, slot))
    clone.decision = None
    clone.reason = None
    return clone
