"""The context-loader example: its database, its lookups, and what a runtime makes of it.

Unit tests drive the store and the lookups directly; the HTTP and MCP tests cross a real
socket (``running_server``); the contract tests run a Runbear thread through the reference
dispatcher with the document generated for the app, and read the context the model would see
on each turn.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sqlite3
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from example_servers import context_loader as cl
from example_servers.context_loader import (
    ContextLoader,
    ContextStore,
    create_app,
    mentioned_order_numbers,
    mentioned_sections,
    sqlite_path,
)
from handler_kit.core.events import SessionStart, UserPromptSubmit
from handler_kit.testing import HookClient, running_server
from tests.support.processes import REPO

DANA = {"channel_user_id": "U0123456789", "user_email": "dana@example.com", "user_name": "Dana"}
ORDER_4821 = (
    "Order #4821 shipped on 2026-08-30 via Posten, tracking PN4821NO; placed 2026-08-27; "
    "1 x Glacier 3-season tent; total USD 640.00 (customer: Dana Whitfield)."
)
UPS_HANDLERS = ["order_1", "order_2", "order_3", "policy_1", "policy_2"]


def ups(prompt: str, **fields: Any) -> UserPromptSubmit:
    return UserPromptSubmit(hook_event_name="UserPromptSubmit", prompt=prompt, **fields)


# -- database URL and seeding ------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("sqlite:///relative/ctx.db", "relative/ctx.db"),
        ("sqlite:////abs/ctx.db", "/abs/ctx.db"),
        ("sqlite:///:memory:", ":memory:"),
        ("sqlite://", ":memory:"),
        ("SQLITE:///x.db", "x.db"),
    ],
)
def test_sqlite_urls_follow_sqlalchemy_spelling(url: str, path: str) -> None:
    assert sqlite_path(url) == path


@pytest.mark.parametrize("url", ["postgresql://db/ctx", "/plain/path.db", "mysql://x"])
def test_a_non_sqlite_url_is_refused_with_the_variable_named(url: str) -> None:
    with pytest.raises(ValueError, match="CONTEXT_LOADER_DB_URL"):
        sqlite_path(url)


def test_first_use_creates_and_seeds_the_file(db_url: str, store: ContextStore) -> None:
    path = Path(sqlite_path(db_url))
    assert not path.exists()  # nothing happens at construction
    assert store.customer("U0123456789", None) is not None
    assert path.is_file()
    with sqlite3.connect(path) as raw:
        counts = [
            raw.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("customers", "orders", "policy_sections")
        ]
    assert counts == [3, 5, 4]


def test_an_existing_database_is_used_as_it_is(db_url: str) -> None:
    path = Path(sqlite_path(db_url))
    path.parent.mkdir(parents=True)
    with sqlite3.connect(path) as raw:
        raw.executescript(cl.SEED_PATH.read_text("utf-8"))
        raw.execute("UPDATE customers SET plan = 'Custom' WHERE id = 1")
        raw.execute("DELETE FROM orders WHERE number = '4907'")
    store = ContextStore(db_url)
    try:
        customer = store.customer("U0123456789", None)
        assert customer is not None and customer.plan == "Custom"
        assert [o.number for o in store.open_orders(customer.id)] == ["4821"]
    finally:
        store.close()


def test_two_workers_seeding_one_new_file_at_once_both_succeed(db_url: str) -> None:
    stores = [ContextStore(db_url) for _ in range(4)]
    barrier = threading.Barrier(len(stores))
    results: list[Any] = []

    def first_query(store: ContextStore) -> None:
        barrier.wait()
        try:
            results.append(len(store.policy_sections()))
        except Exception as exc:  # collected, asserted below
            results.append(exc)

    threads = [threading.Thread(target=first_query, args=(s,)) for s in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for store in stores:
        store.close()
    assert results == [4, 4, 4, 4]


def test_the_connection_is_read_only(store: ContextStore) -> None:
    store.policy_sections()
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        store._query("DELETE FROM customers", ())


def test_memory_database_is_seeded_too() -> None:
    store = ContextStore("sqlite:///:memory:")
    try:
        assert len(store.policy_sections()) == 4
    finally:
        store.close()


def test_url_comes_from_the_environment_at_first_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = ContextStore()
    monkeypatch.setenv("CONTEXT_LOADER_DB_URL", f"sqlite:///{tmp_path / 'env.db'}")
    try:
        store.policy_sections()
    finally:
        store.close()
    assert (tmp_path / "env.db").is_file()


def test_default_location_is_the_user_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CONTEXT_LOADER_DB_URL", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert ContextStore().url == f"sqlite:///{tmp_path}/handler-kit/context_loader.sqlite3"


def test_creating_the_app_touches_no_file(tmp_path: Path) -> None:
    create_app(f"sqlite:///{tmp_path / 'lazy.db'}")
    assert not (tmp_path / "lazy.db").exists()


# -- who, and what the message is about --------------------------------------------------


def test_customer_by_channel_user_id_then_by_email(store: ContextStore) -> None:
    by_id = store.customer("U0222222222", None)
    assert by_id is not None and by_id.name == "Raj Patel"
    by_email = store.customer(None, "MIA@Example.com")  # e-mail matched without case
    assert by_email is not None and by_email.name == "Mia Svensson"
    unknown_id_known_email = store.customer("U_NOT_A_USER", "dana@example.com")
    assert unknown_id_known_email is not None and unknown_id_known_email.id == 1


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"channel_user_id": "U_NOBODY"},
        {"user_email": "nobody@example.com"},
        {"channel_user_id": "' OR '1'='1", "user_email": "x' OR 1=1 --"},
        {"channel_user_id": "   ", "user_email": ""},
    ],
)
def test_a_missing_user_gives_no_context_not_an_error(
    loader: ContextLoader, fields: dict[str, str]
) -> None:
    start = SessionStart(hook_event_name="SessionStart", **fields)
    assert loader.profile(start) is None
    assert loader.order_fragments(ups("where is order 4821?", **fields)) == []


def test_profile_lists_plan_region_and_open_orders(loader: ContextLoader) -> None:
    profile = loader.profile(SessionStart(hook_event_name="SessionStart", **DANA))
    assert profile == (
        "Customer profile (Fjord Outfitters records):\n"
        "Dana Whitfield <dana@example.com> is on the Enterprise plan, region EU (Oslo).\n"
        "Open orders:\n"
        "- #4821 shipped on 2026-08-30 via Posten, tracking PN4821NO; placed 2026-08-27; "
        "1 x Glacier 3-season tent; total USD 640.00.\n"
        "- #4907 processing; placed 2026-09-02; 2 x Merino base layer (M); total USD 118.00."
    )
    mia = loader.profile(SessionStart(hook_event_name="SessionStart", user_email="mia@example.com"))
    assert mia is not None and mia.endswith("No open orders.")


@pytest.mark.parametrize(
    ("prompt", "numbers"),
    [
        ("Can I get a refund for order 4821?", ["4821"]),
        ("#4821 and #4907, then 4821 again", ["4821", "4907"]),
        ("order4821 A4821 4821-7 48 21", []),
        ("(4821), 4907.", ["4821", "4907"]),
        (None, []),
    ],
)
def test_order_numbers_in_a_message(prompt: str | None, numbers: list[str]) -> None:
    assert mentioned_order_numbers(prompt) == numbers


def test_order_candidates_are_bounded() -> None:
    prompt = " ".join(str(n) for n in range(10000, 10100))
    assert len(mentioned_order_numbers(prompt)) == cl.MAX_ORDER_CANDIDATES


def test_policy_sections_by_keyword_prefix_in_order_of_mention(store: ContextStore) -> None:
    sections = store.policy_sections()
    found = mentioned_sections("It arrived DAMAGED; was it shipped late? Refunded?", sections)
    assert [s.slug for s in found] == ["warranty", "shipping", "returns"]
    assert mentioned_sections("hello there", sections) == []


def test_only_the_customers_own_orders_are_shown(loader: ContextLoader) -> None:
    # 5102 is Raj's order: Dana asking about it learns nothing about it
    fragments = loader.order_fragments(ups("What about 5102 and 4821 and 9999?", **DANA))
    assert fragments == [ORDER_4821]
    raj = {"channel_user_id": "U0222222222"}
    assert loader.order_fragments(ups("4821?", **raj)) == []
    assert loader.order_fragments(ups("5102?", **raj))[0].startswith("Order #5102 shipped")


def test_fragments_are_rendered_identically_every_time(db_url: str) -> None:
    event = ups("refund for #4821, shipping and warranty?", **DANA)
    first = ContextLoader(ContextStore(db_url)).fragments(event)
    second = ContextLoader(ContextStore(db_url)).fragments(event)  # another process, say
    assert first == second
    assert len(first) == 4 and first[0] == ORDER_4821


def test_policy_sections_are_given_to_anyone(loader: ContextLoader) -> None:
    assert loader.policy_fragments(ups("what is your warranty?"))[0].startswith(
        "Policy, Warranty and repairs:"
    )


# -- the HookApp, in process -------------------------------------------------------------


def test_handlers_one_fragment_each(db_url: str) -> None:
    app = create_app(db_url)
    assert [(h.name, h.event) for h in app.handlers] == [
        ("customer_profile", "SessionStart"),
        *((name, "UserPromptSubmit") for name in UPS_HANDLERS),
    ]
    prompt = "Refund #4907 and #4821? What does shipping cost?"
    with HookClient.for_app(app) as client:
        answers = {
            name: client.send(ups(prompt, **DANA), handler=name).context for name in UPS_HANDLERS
        }
    assert answers["order_1"] is not None and answers["order_1"].startswith("Order #4907")
    assert answers["order_2"] == ORDER_4821
    assert answers["order_3"] is None
    assert answers["policy_1"] is not None and answers["policy_1"].startswith("Policy, Returns")
    assert answers["policy_2"] is not None and answers["policy_2"].startswith("Policy, Shipping")


def test_the_example_app_is_registered_for_make_run() -> None:
    from example_servers.run import EXAMPLES
    from handler_kit.core.loader import load_app

    assert load_app(EXAMPLES["context_loader"][0]) is cl.app


# -- real HTTP and MCP -------------------------------------------------------------------


def test_webhook_over_real_http(db_url: str) -> None:
    with running_server(create_app(db_url)) as server, server.client() as client:
        start = client.send({"hook_event_name": "SessionStart", "session_id": "t1", **DANA})
        assert start.status_code == 200
        assert start.context is not None and "Enterprise plan" in start.context
        order = client.send(ups("Where is #4821?", **DANA), handler="order_1")
        assert order.status_code == 200 and order.context == ORDER_4821
        nobody = client.send(
            {"hook_event_name": "SessionStart", "channel_user_id": "U_NOBODY"},
            handler="customer_profile",
        )
        assert nobody.status_code == 200 and nobody.no_opinion and nobody.body == b"{}"
        # POST /hooks merges every handler into one string: fine for a look, not for de-dup
        merged = client.send(ups("Where is #4821? Return it?", **DANA))
        assert merged.context is not None
        assert merged.context.startswith(ORDER_4821 + "\n\nPolicy, Returns")


def test_mcp_tools_over_real_http(db_url: str) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def call(server: Any) -> tuple[list[str], Any, Any]:
        headers = {"Authorization": f"Bearer {server.token}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            Client(streamable_http_client(server.mcp_url, http_client=http)) as client,
        ):
            tools = await client.list_tools()
            order = await client.call_tool(
                "order_1", {"prompt": "Where is #4821?", "channel_user_id": "U0123456789"}
            )
            nobody = await client.call_tool("customer_profile", {"user_email": "no@example.com"})
            return [t.name for t in tools.tools], order, nobody

    with running_server(create_app(db_url)) as server:
        names, order, nobody = asyncio.run(call(server))
    assert names == ["customer_profile", *UPS_HANDLERS]
    assert not order.is_error
    assert json.loads(order.content[0].text) == {
        "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": ORDER_4821}
    }
    assert not nobody.is_error and json.loads(nobody.content[0].text) == {}


# -- contract: a Runbear thread through the reference dispatcher -------------------------

TURNS = [
    "Hi! Can I return order #4821?",
    "And what about #4907, and the return window again for #4821?",
    "Is shipping free for me? Where is 4907 now?",
]


def run_thread(via: str, db_url: str, user: dict[str, str] | None = None) -> list[Any]:
    """SessionStart, then three messages of one thread: the outcome of each event."""
    thread = {"session_id": "th-1", "thread_id": "th-1", "agent_name": "Support"}
    thread.update(DANA if user is None else user)
    from handler_kit.dispatcher import Dispatcher
    from handler_kit.runbear.generate import runbear_document

    app = create_app(db_url)
    with running_server(app, tls=True) as server:
        document = runbear_document(
            app,
            transport="http" if via == "http" else "mcp",
            base_url=server.url,
            mcp_server="context-loader",
            authorization=f"Bearer {server.token}",
        ).document
        dispatcher = Dispatcher(
            document,
            mcp_servers={"context-loader": server.mcp_url},
            mcp_headers={"context-loader": {"Authorization": f"Bearer {server.token}"}},
            allow_private=True,
            ca_file=server.ca_file,
        )
        events = [{"hook_event_name": "SessionStart", "source": "startup", **thread}]
        events += [
            {"hook_event_name": "UserPromptSubmit", "turn_id": f"turn-{i}", "prompt": p, **thread}
            for i, p in enumerate(TURNS, 1)
        ]

        async def run() -> list[Any]:
            async with dispatcher:
                return [await dispatcher.dispatch(event) for event in events]

        return asyncio.run(run())


@pytest.mark.parametrize("via", ["http", "mcp"])
def test_a_thread_sees_each_fragment_once(via: str, db_url: str) -> None:
    start, turn1, turn2, turn3 = run_thread(via, db_url)
    returns = turn1.additional_context[1]
    assert returns.startswith("Policy, Returns and refunds:")

    # SessionStart: the profile goes into the system prompt once
    assert len(start.additional_context) == 1
    assert start.additional_context[0].startswith("Customer profile")
    # turn 1: order 4821 and the returns policy
    assert turn1.additional_context == [ORDER_4821, returns]
    # turn 2: the handlers return 4907, 4821 and returns again; only 4907 is new
    order_4907 = turn2.additional_context[0]
    assert order_4907.startswith("Order #4907 processing")
    assert turn2.additional_context == [order_4907]
    assert [h.output.context if h.output else None for h in turn2.handlers] == [
        order_4907,
        ORDER_4821,
        None,
        returns,
        None,
    ]
    # turn 3: shipping is new; 4907 was injected on turn 2
    assert len(turn3.additional_context) == 1
    assert turn3.additional_context[0].startswith("Policy, Shipping and delivery:")
    for outcome in (start, turn1, turn2, turn3):
        assert outcome.decision is None
        assert set(outcome.statuses) <= {"ok"}


def test_a_thread_for_an_unknown_user_gets_policies_only(db_url: str) -> None:
    start, turn1, turn2, turn3 = run_thread("http", db_url, {"channel_user_id": "U_NOBODY"})
    assert start.additional_context == []
    assert [c.split(":")[0] for c in turn1.additional_context] == ["Policy, Returns and refunds"]
    assert turn2.additional_context == []
    assert [c.split(":")[0] for c in turn3.additional_context] == ["Policy, Shipping and delivery"]
    assert all(set(o.statuses) == {"ok"} for o in (start, turn1, turn2, turn3))


# -- the docs page ------------------------------------------------------------------------

PAGE = REPO / "docs" / "runbear.md"
DOCUMENT = "docs/examples/context-loader-runbear.json"


def page_blocks(language: str) -> list[str]:
    text = PAGE.read_text(encoding="utf-8")
    match = re.search(
        r"<!-- section:context-loader -->(.*?)<!-- /section:context-loader -->", text, re.S
    )
    assert match, "docs/runbear.md has no context-loader section"
    return re.findall(rf"```{language}\n(.*?)```", match.group(1), re.S)


def test_docs_curl_answers_as_shown(db_url: str) -> None:
    (curl,) = [block for block in page_blocks("bash") if block.startswith("curl ")]
    shown = page_blocks("json")[0].strip()
    with running_server(create_app(db_url)) as server:
        command = curl.replace("http://127.0.0.1:8000", server.url)
        done = subprocess.run(
            ["bash", "-c", command],
            env={**os.environ, "TOKEN": server.token},
            capture_output=True,
            text=True,
            check=True,
        )
    assert done.stdout == shown


def test_docs_document_is_the_generated_one() -> None:
    from handler_kit.runbear.generate import runbear_document

    assert page_blocks("json")[1].strip() == f'--8<-- "{DOCUMENT}"'
    shown = json.loads((REPO / DOCUMENT).read_text(encoding="utf-8"))
    generated = runbear_document(cl.app, base_url="https://hooks.example.com").document
    assert shown == generated


def test_docs_make_run_line_names_the_example() -> None:
    from example_servers.run import EXAMPLES

    commands = "".join(page_blocks("sh"))
    assert "make run APP=context_loader" in commands
    assert "context_loader" in EXAMPLES


def test_a_bad_url_fails_at_start_up_not_per_event(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTEXT_LOADER_DB_URL", "postgresql://db/ctx")
    with pytest.raises(ValueError, match="sqlite:///"):
        create_app()
