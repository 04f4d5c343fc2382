"""Context loader: per-user context from a database, before the model answers.

The support agent of Fjord Outfitters should know who it is talking to and what they are
talking about without a tool call per fact:

- SessionStart (``customer_profile``): the customer's profile, plan, region and open orders,
  looked up by ``channel_user_id`` (the Slack user id Runbear sends) or else ``user_email``.
  Runbear adds it to the system prompt once per thread.
- UserPromptSubmit: the fragments the message is about, orders mentioned by number ("4821",
  "#4821") and policy sections by keyword (returns, shipping, warranty, billing).

**Stateless, one fragment per handler.** Runbear does not inject a UserPromptSubmit context
string identical to one already injected earlier in the thread, so these handlers return every
relevant fragment on every message and keep no memory of what was sent. That works only if the
strings compared are single fragments: Runbear compares each *handler's* additionalContext as one
string, so a handler returning "order 4821 + returns policy" on one turn and "order 4821 +
shipping policy" on the next would inject order 4821 twice. Hence each fragment is its own
handler output: ``order_1``..``order_3`` answer the 1st..3rd order mentioned, ``policy_1`` and
``policy_2`` the 1st and 2nd policy section mentioned, each rendered deterministically (no
clock, fixed formatting) so the same fact is the same string on every turn. The trade-off: a
message mentioning a 4th order or a 3rd policy section gets only the first ones (5 of Runbear's 8
handlers per event are used, and at 4 handlers at a time they run in two waves). Point the
runtime at ``/hooks/{name}`` or the per-handler MCP tools, as the generated document does:
``POST /hooks`` merges every handler into one string, which defeats the de-duplication.

**Privacy.** An order fragment is given only for the customer's own orders: a number that
belongs to someone else (or to nobody) gives no context. An unknown user gives no context at
all, never an error. Policy sections are public and are given to anyone.

Configured by ``CONTEXT_LOADER_DB_URL`` (``sqlite:///relative.db``, ``sqlite:////abs/path.db``
or ``sqlite:///:memory:``; default: a file under ``$XDG_CACHE_HOME/handler-kit/``, created and
seeded from ``example_servers/data/context_loader.sql`` on first use). A database that already
has a ``customers`` table is used as it is.

Serve it with ``make run APP=context_loader`` or
``handler-kit serve example_servers.context_loader:app``.
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from handler_kit import HookApp, SessionStart, UserPromptSubmit

ORDER_SLOTS = 3
POLICY_SLOTS = 2
# Candidate order numbers read from one message: bounds the query however long the prompt.
MAX_ORDER_CANDIDATES = 20
ENV_DB_URL = "CONTEXT_LOADER_DB_URL"
# Installed beside this module (package-data example_servers/data/*).
SEED_PATH = Path(__file__).with_name("data") / "context_loader.sql"

# "4821", "#4821", "order 4821", but not "A4821" or "4821-7" (not an order number).
_ORDER_NUMBER = re.compile(r"(?<![\w-])#?(\d{4,8})(?![\w-])")


def default_db_url() -> str:
    """A file in the user's cache folder: writable wherever the package is installed."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return "sqlite:///" + str(Path(cache) / "handler-kit" / "context_loader.sqlite3")


def sqlite_path(url: str) -> str:
    """The SQLite path of a database URL, with SQLAlchemy's spelling (``sqlite:///rel.db``,
    ``sqlite:////abs.db``), so the URL a team already uses elsewhere works here."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() not in ("sqlite", "sqlite3"):
        raise ValueError(
            f"{ENV_DB_URL} must be a sqlite:/// URL (this example uses Python's sqlite3), "
            f"not {url.split('://')[0]!r}://..."
        )
    path = rest[1:] if rest.startswith("/") else rest
    if path in ("", ":memory:"):
        return ":memory:"
    return path


@dataclass(frozen=True, slots=True)
class Customer:
    id: int
    name: str
    email: str | None
    plan: str
    region: str


@dataclass(frozen=True, slots=True)
class Order:
    number: str
    status: str
    placed_on: str
    shipped_on: str | None
    carrier: str | None
    tracking: str | None
    items: str
    total: str


@dataclass(frozen=True, slots=True)
class PolicySection:
    slug: str
    title: str
    keywords: tuple[str, ...]
    body: str


_ORDER_COLUMNS = "number, status, placed_on, shipped_on, carrier, tracking, items, total"
OPEN_STATUSES = ("processing", "shipped")


class ContextStore:
    """Read access to the customer database; opened, and seeded if new, on first use.

    One connection guarded by a lock: SQLite answers these queries in microseconds, a lock
    costs less than a connection per call, and it makes ``sqlite:///:memory:`` work. Nothing
    happens at construction, so importing the app (``handler-kit document``, a command hook)
    touches no file.
    """

    def __init__(self, url: str | None = None) -> None:
        self._url = url
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        sqlite_path(self.url)  # a bad URL fails at start-up, not on every event

    @property
    def url(self) -> str:
        """The database URL: the one given, else ``$CONTEXT_LOADER_DB_URL``, else the default."""
        return self._url or os.environ.get(ENV_DB_URL) or default_db_url()

    def _connect(self) -> sqlite3.Connection:
        path = sqlite_path(self.url)
        if path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        # autocommit mode: the seed script manages its own transaction
        connection = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        connection.execute("PRAGMA busy_timeout = 2000")
        try:
            if not _has_table(connection, "customers"):
                seed(connection)
            # this app only reads: a bug or an injected query cannot change the data
            connection.execute("PRAGMA query_only = ON")
        except BaseException:
            connection.close()
            raise
        return connection

    def _query(self, sql: str, params: tuple[Any, ...] | list[Any]) -> list[tuple[Any, ...]]:
        with self._lock:
            if self._connection is None:
                self._connection = self._connect()
            return self._connection.execute(sql, params).fetchall()

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    # -- queries (all parameterised) -------------------------------------------------------

    def customer(self, channel_user_id: str | None, email: str | None) -> Customer | None:
        """The customer behind a channel user id, else behind an e-mail address, else None."""
        columns = "id, name, email, plan, region"
        if channel_user_id:
            rows = self._query(
                f"SELECT {columns} FROM customers WHERE channel_user_id = ?", (channel_user_id,)
            )
            if rows:
                return Customer(*rows[0])
        if email:
            rows = self._query(f"SELECT {columns} FROM customers WHERE email = ?", (email,))
            if rows:
                return Customer(*rows[0])
        return None

    def open_orders(self, customer_id: int) -> list[Order]:
        """The customer's orders not yet delivered or cancelled, by number."""
        marks = ", ".join("?" for _ in OPEN_STATUSES)
        rows = self._query(
            f"SELECT {_ORDER_COLUMNS} FROM orders "
            f"WHERE customer_id = ? AND status IN ({marks}) ORDER BY number",
            (customer_id, *OPEN_STATUSES),
        )
        return [Order(*row) for row in rows]

    def orders(self, customer_id: int, numbers: list[str]) -> list[Order]:
        """The customer's own orders among ``numbers``, in the order of ``numbers``."""
        if not numbers:
            return []
        marks = ", ".join("?" for _ in numbers)
        rows = self._query(
            f"SELECT {_ORDER_COLUMNS} FROM orders WHERE customer_id = ? AND number IN ({marks})",
            (customer_id, *numbers),
        )
        found = {row[0]: Order(*row) for row in rows}
        return [found[n] for n in numbers if n in found]

    def policy_sections(self) -> list[PolicySection]:
        rows = self._query(
            "SELECT slug, title, keywords, body FROM policy_sections ORDER BY position, slug", ()
        )
        return [
            PolicySection(
                slug,
                title,
                tuple(k.strip().lower() for k in keywords.split(",") if k.strip()),
                body,
            )
            for slug, title, keywords, body in rows
        ]


def _has_table(connection: sqlite3.Connection, name: str) -> bool:
    row = connection.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    ).fetchone()
    return row is not None


def seed(connection: sqlite3.Connection) -> None:
    """Create the tables and the bundled sample data, in one transaction.

    The script is idempotent (``IF NOT EXISTS``, ``INSERT OR IGNORE``): two worker processes
    that both find a new file empty both run it, and the second changes nothing.
    """
    script = SEED_PATH.read_text("utf-8")
    try:
        connection.executescript(f"BEGIN IMMEDIATE;\n{script}\nCOMMIT;")
    except BaseException:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise


# -- rendering: deterministic, so one fact is one identical string on every turn -----------


def render_order_line(order: Order) -> str:
    """One order in a sentence: status, dates, carrier, items, total."""
    if order.status == "shipped" and order.shipped_on:
        state = f"shipped on {order.shipped_on}"
        if order.carrier:
            state += f" via {order.carrier}"
        if order.tracking:
            state += f", tracking {order.tracking}"
    elif order.status == "delivered" and order.shipped_on:
        state = f"delivered (shipped on {order.shipped_on})"
    else:
        state = order.status
    return f"#{order.number} {state}; placed {order.placed_on}; {order.items}; total {order.total}"


def render_profile(customer: Customer, open_orders: list[Order]) -> str:
    who = customer.name + (f" <{customer.email}>" if customer.email else "")
    lines = [
        "Customer profile (Fjord Outfitters records):",
        f"{who} is on the {customer.plan} plan, region {customer.region}.",
    ]
    if open_orders:
        lines.append("Open orders:")
        lines.extend(f"- {render_order_line(order)}." for order in open_orders)
    else:
        lines.append("No open orders.")
    return "\n".join(lines)


def render_order(customer: Customer, order: Order) -> str:
    return f"Order {render_order_line(order)} (customer: {customer.name})."


def render_policy(section: PolicySection) -> str:
    return f"Policy, {section.title}: {section.body}"


# -- what a message is about -------------------------------------------------------------


def mentioned_order_numbers(prompt: str | None) -> list[str]:
    """Order numbers in ``prompt``, first mention first, without repeats."""
    numbers: list[str] = []
    for match in _ORDER_NUMBER.finditer(prompt or ""):
        number = match.group(1)
        if number not in numbers:
            numbers.append(number)
            if len(numbers) == MAX_ORDER_CANDIDATES:
                break
    return numbers


def mentioned_sections(prompt: str | None, sections: list[PolicySection]) -> list[PolicySection]:
    """Sections one of whose keywords starts a word of ``prompt`` ("refund" matches
    "refunded"), ordered by their first mention in the prompt."""
    text = (prompt or "").lower()
    found: list[tuple[int, int, PolicySection]] = []
    for rank, section in enumerate(sections):
        positions = [
            match.start()
            for keyword in section.keywords
            if (match := re.search(r"\b" + re.escape(keyword), text))
        ]
        if positions:
            found.append((min(positions), rank, section))
    return [section for _, _, section in sorted(found, key=lambda item: item[:2])]


class ContextLoader:
    """The lookups behind the handlers, separate from the HookApp so they can be tested alone."""

    def __init__(self, store: ContextStore) -> None:
        self.store = store

    def customer_for(self, event: Any) -> Customer | None:
        return self.store.customer(
            _text(getattr(event, "channel_user_id", None)),
            _text(getattr(event, "user_email", None)),
        )

    def profile(self, event: Any) -> str | None:
        customer = self.customer_for(event)
        if customer is None:
            return None
        return render_profile(customer, self.store.open_orders(customer.id))

    def order_fragments(self, event: Any) -> list[str]:
        numbers = mentioned_order_numbers(getattr(event, "prompt", None))
        if not numbers:
            return []  # no database round trip for a message that names no order
        customer = self.customer_for(event)
        if customer is None:
            return []
        return [render_order(customer, o) for o in self.store.orders(customer.id, numbers)]

    def policy_fragments(self, event: Any) -> list[str]:
        prompt = getattr(event, "prompt", None)
        if not prompt:
            return []
        sections = mentioned_sections(prompt, self.store.policy_sections())
        return [render_policy(section) for section in sections]

    def fragments(self, event: Any) -> list[str]:
        """Every fragment relevant to the message: orders first, then policy sections."""
        return self.order_fragments(event) + self.policy_fragments(event)


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def create_app(
    db_url: str | None = None, *, store: ContextStore | None = None, name: str = "context-loader"
) -> HookApp:
    """The context-loader HookApp over ``store``, else the database at ``db_url``, else the
    one ``$CONTEXT_LOADER_DB_URL`` names (read on the first event, not at import)."""
    loader = ContextLoader(store or ContextStore(db_url))
    hooks = HookApp(name, description="Per-user context for a support agent, from a database.")

    @hooks.session_start()
    def customer_profile(event: SessionStart) -> str | None:
        """The customer's profile, plan, region and open orders, once per thread."""
        return loader.profile(event)

    for slot in range(ORDER_SLOTS):
        _register_slot(
            hooks,
            f"order_{slot + 1}",
            slot,
            loader.order_fragments,
            f"The {_ordinal(slot)} order the message mentions, if it is the customer's own: "
            "status, dates, carrier, items, total. One order per tool, so the runtime's "
            "de-duplication drops an order already shown in the thread.",
        )
    for slot in range(POLICY_SLOTS):
        _register_slot(
            hooks,
            f"policy_{slot + 1}",
            slot,
            loader.policy_fragments,
            f"The {_ordinal(slot)} policy section the message is about (returns, shipping, "
            "warranty, billing). One section per tool, so the runtime's de-duplication "
            "drops a section already shown in the thread.",
        )
    return hooks


def _register_slot(hooks: HookApp, name: str, slot: int, fragments: Any, description: str) -> None:
    def handler(event: UserPromptSubmit) -> str | None:
        found = fragments(event)
        return found[slot] if slot < len(found) else None

    handler.__name__ = name
    handler.__doc__ = description
    hooks.user_prompt_submit(name=name)(handler)


def _ordinal(slot: int) -> str:
    return ("first", "second", "third", "fourth", "fifth")[slot]


app = create_app()
