"""The inspector's HTML: the page, the login form, table rows and latency sparklines.

Everything a record holds may come from an agent's user (a prompt, a tool argument, a reason
echoing them), so every value goes through :func:`html.escape` here, and the page's script
only ever writes ``textContent``. No inline script or style exists (the Content-Security-Policy
forbids both): the page reads its settings from ``data-`` attributes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Any

from handler_kit.core.names import Status

BASE = "/_inspector"
# Filter choices shown even before any record has them.
EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop")
DECISIONS = ("allow", "deny", "ask", "block", "halt", "none")
STATUSES = tuple(Status)
KINDS = (("decision", "decisions"), ("shadow", "shadow records"))
# decisions a shadow candidate's answer disagreed with
SHADOWS = (("disagrees", "shadow disagrees"),)
COLUMNS = ("Time", "Event", "Handler", "Tool", "Decision", "Reason", "Latency", "Status")
SPARK_WIDTH, SPARK_HEIGHT = 160, 28


def handler_names(record: Mapping[str, Any]) -> list[str]:
    """The names of a decision's handlers, in order (version 2 nests them; a version-1
    record read as a decision has them too)."""
    names = []
    for handler in record.get("handlers") or ():
        name = handler.get("name") if isinstance(handler, Mapping) else handler
        if isinstance(name, str):
            names.append(name)
    return names


def summary(record: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a decision the table shows (the API's list items): no input, no output,
    its handlers by name."""
    latency = record.get("latency_ms")
    return {
        "id": record.get("id"),
        "event_id": record.get("event_id"),
        "kind": record.get("kind"),
        "time": record.get("time"),
        "event": record.get("event"),
        "handlers": handler_names(record),
        "app": record.get("app"),
        "decision_id": record.get("decision_id"),
        "agrees": record.get("agrees"),
        "tool_name": record.get("tool_name"),
        "decision": record.get("decision"),
        "reason": record.get("reason"),
        "latency_ms": latency if isinstance(latency, int | float) else None,
        "status": record.get("status"),
        "transport": record.get("transport"),
        # which server wrote it: one inspector may read every replica's records (Postgres)
        "replica": record.get("replica"),
    }


def cells(item: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(class, text) of each column of a row: the one definition both renderers follow
    (``inspector.js`` mirrors it for rows that arrive by polling)."""
    time = str(item.get("time") or "")
    handler = ", ".join(handler_names(item))
    latency = item.get("latency_ms")
    return [
        ("time", time[11:23] if len(time) >= 23 else time),
        ("event", str(item.get("event") or "")),
        ("handler", str(handler or "")),
        ("tool", str(item.get("tool_name") or "")),
        ("decision", str(item.get("decision") or "—")),
        ("reason", str(item.get("reason") or "")),
        ("latency", f"{latency:.1f} ms" if isinstance(latency, int | float) else ""),
        ("status", str(item.get("status") or "")),
    ]


def row(item: Mapping[str, Any]) -> str:
    attrs = (
        f' data-id="{escape(str(item.get("id", "")))}"'
        f' data-event-id="{escape(str(item.get("event_id", "")))}"'
        f' data-kind="{escape(str(item.get("kind", "")))}"'
        f' data-decision="{escape(str(item.get("decision") or "none"))}"'
        f' data-status="{escape(str(item.get("status", "")))}"'
    )
    tds = "".join(
        f'<td class="{cls}" title="{escape(text)}">{escape(text)}</td>' for cls, text in cells(item)
    )
    return f'<tr tabindex="0"{attrs}>{tds}</tr>'


def sparkline(name: str, latencies: Sequence[float]) -> str:
    """One handler's recent latencies (oldest first) as an inline SVG polyline."""
    top = max(latencies) if latencies else 0.0
    scale = top or 1.0
    count = len(latencies)
    # one call is drawn as a level line, so a handler called once is still visible
    drawn = list(latencies) * 2 if count == 1 else list(latencies)
    step = SPARK_WIDTH / max(len(drawn) - 1, 1)
    points = " ".join(
        f"{i * step:.1f},{SPARK_HEIGHT - 2 - (value / scale) * (SPARK_HEIGHT - 4):.1f}"
        for i, value in enumerate(drawn)
    )
    last = latencies[-1] if latencies else 0.0
    label = f"{name}: last {last:.1f} ms, max {top:.1f} ms over {count} calls"
    dot = ""
    if latencies:
        x, y = points.split(" ")[-1].split(",")
        dot = f'<circle cx="{x}" cy="{y}" r="2" fill="#2563eb"/>'
    return (
        f'<figure class="spark" data-handler="{escape(name)}">'
        f'<figcaption><span class="spark-name">{escape(name)}</span>'
        f'<span class="spark-value">{last:.1f} ms</span></figcaption>'
        f'<svg width="{SPARK_WIDTH}" height="{SPARK_HEIGHT}" '
        f'viewBox="0 0 {SPARK_WIDTH} {SPARK_HEIGHT}" role="img" aria-label="{escape(label)}">'
        f"<title>{escape(label)}</title>"
        f'<polyline fill="none" stroke="#2563eb" stroke-width="1.5" points="{points}"/>'
        f"{dot}</svg></figure>"
    )


def sparklines(series: Mapping[str, Sequence[float]]) -> str:
    if not series:
        return '<p class="empty">No handler calls yet.</p>'
    return "".join(sparkline(name, values) for name, values in sorted(series.items()))


def source_label(source: str) -> str:
    """The source line shown in the header: the file's name (its path is the tooltip)."""
    head, sep, path = source.rpartition(": ")
    return f"{head}{sep}{path.replace(chr(92), '/').rsplit('/', 1)[-1]}" if sep else source


def _select(name: str, label: str, choices: Iterable[tuple[str, str]], current: str | None) -> str:
    options = ['<option value="">all</option>']
    for value, text in choices:
        selected = " selected" if value == current else ""
        options.append(f'<option value="{escape(value)}"{selected}>{escape(text)}</option>')
    return (
        f'<label>{escape(label)} <select name="{escape(name)}" id="filter-{escape(name)}">'
        f"{''.join(options)}</select></label>"
    )


def page(
    *,
    app_name: str,
    records: Sequence[Mapping[str, Any]],
    filters: Mapping[str, str | None],
    series: Mapping[str, Sequence[float]],
    events: Iterable[str] = (),
    logged_in: bool,
    source: str,
) -> str:
    """The inspector page with its first rows; ``inspector.js`` keeps it live."""
    last_id = max((int(r["id"]) for r in records if isinstance(r.get("id"), int)), default=0)
    event_choices = sorted(set(EVENTS) | {e for e in events if e})
    head = "".join(f'<th scope="col">{escape(c)}</th>' for c in COLUMNS)
    rows = "".join(row(r) for r in records)
    logout = (
        f'<form method="post" action="{BASE}/logout" class="logout">'
        '<button type="submit">Log out</button></form>'
        if logged_in
        else ""
    )
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Inspector · {escape(app_name)}</title>
<link rel="stylesheet" href="{BASE}/static/inspector.css">
<script src="{BASE}/static/inspector.js" defer></script>
</head>
<body data-base="{BASE}" data-last-id="{last_id}">
<header>
<h1>handler-kit inspector</h1>
<span class="app">{escape(app_name)}</span>
<span id="live" class="live" aria-live="polite">live</span>
<span class="source" title="{escape(source)}">{escape(source_label(source))}</span>
{logout}
</header>
<section class="sparklines" aria-label="Latency per handler">
<h2>Latency per handler</h2>
<div id="sparklines">{sparklines(series)}</div>
</section>
<form id="filters" class="filters" method="get" action="{BASE}">
{_select("event", "Event", ((e, e) for e in event_choices), filters.get("event"))}
{_select("decision", "Decision", ((d, d) for d in DECISIONS), filters.get("decision"))}
{_select("status", "Status", ((s, s) for s in STATUSES), filters.get("status"))}
{_select("kind", "Records", KINDS, filters.get("kind"))}
{_select("shadow", "Shadow", SHADOWS, filters.get("shadow"))}
<noscript><button type="submit">Filter</button></noscript>
<span id="count" class="count">{len(records)} shown</span>
</form>
<main>
<table id="records">
<thead><tr>{head}</tr></thead>
<tbody>{rows}</tbody>
</table>
<aside id="detail" class="detail" hidden>
<header><h2 id="detail-title">Record</h2>
<button type="button" id="detail-close" aria-label="Close">&times;</button></header>
<dl id="detail-meta"></dl>
<h3>Input</h3>
<pre id="detail-input"></pre>
<h3>Output</h3>
<pre id="detail-output"></pre>
<h3 id="detail-invocations-title">Handlers</h3>
<pre id="detail-invocations"></pre>
<h3 id="detail-shadows-title">Shadow</h3>
<pre id="detail-shadows"></pre>
</aside>
</main>
</body>
</html>
"""


def login_page(*, app_name: str, error: str | None = None, next_path: str = BASE) -> str:
    message = f'<p class="error" role="alert">{escape(error)}</p>' if error else ""
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Log in · Inspector · {escape(app_name)}</title>
<link rel="stylesheet" href="{BASE}/static/inspector.css">
</head>
<body class="login">
<form method="post" action="{BASE}/login" class="login-form">
<h1>handler-kit inspector</h1>
<p>{escape(app_name)}: paste one of the server's bearer tokens.</p>
{message}
<label for="token">Bearer token</label>
<input type="password" id="token" name="token" autocomplete="current-password" required autofocus>
<input type="hidden" name="next" value="{escape(next_path)}">
<button type="submit" id="login">Log in</button>
</form>
</body>
</html>
"""
