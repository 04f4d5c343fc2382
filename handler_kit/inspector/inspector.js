// handler-kit inspector: keeps the server-rendered page live by polling the JSON API.
// No framework, no build step. Values from records are only ever written as textContent
// (they may hold anything a user typed); the one innerHTML is the sparkline markup, which
// the server renders with every value escaped.
(function () {
  "use strict";

  var POLL_MS = 1000;
  var MAX_ROWS = 200;
  var FILTERS = ["event", "decision", "status", "kind", "shadow"];

  var body = document.body;
  var base = body.dataset.base;
  var lastId = Number(body.dataset.lastId || 0);
  var tbody = document.querySelector("#records tbody");
  var form = document.getElementById("filters");
  var live = document.getElementById("live");
  var count = document.getElementById("count");
  var detail = document.getElementById("detail");
  var timer = null;
  var generation = 0;

  function filterParams() {
    var params = new URLSearchParams();
    FILTERS.forEach(function (name) {
      var value = form.elements[name].value;
      if (value) params.set(name, value);
    });
    return params;
  }

  // Mirrors render.cells() in handler_kit/inspector/render.py.
  function cells(item) {
    var time = item.time || "";
    var handler = (item.handlers || []).join(", ");
    var latency = typeof item.latency_ms === "number" ? item.latency_ms.toFixed(1) + " ms" : "";
    return [
      ["time", time.length >= 23 ? time.slice(11, 23) : time],
      ["event", item.event || ""],
      ["handler", handler],
      ["tool", item.tool_name || ""],
      ["decision", item.decision || "\u2014"],
      ["reason", item.reason || ""],
      ["latency", latency],
      ["status", item.status || ""],
    ];
  }

  function makeRow(item) {
    var tr = document.createElement("tr");
    tr.tabIndex = 0;
    tr.dataset.id = item.id;
    tr.dataset.eventId = item.event_id;
    tr.dataset.kind = item.kind || "";
    tr.dataset.decision = item.decision || "none";
    tr.dataset.status = item.status || "";
    tr.classList.add("new");
    cells(item).forEach(function (cell) {
      var td = document.createElement("td");
      td.className = cell[0];
      td.textContent = cell[1];
      td.title = cell[1];
      tr.appendChild(td);
    });
    return tr;
  }

  function getJSON(url) {
    return fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        if (response.status === 401) {
          var back = location.pathname + location.search;
          location.href = base + "/login?next=" + encodeURIComponent(back);
          throw new Error("logged out");
        }
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.json();
      });
  }

  function setLive(ok) {
    live.textContent = ok ? "live" : "offline";
    live.classList.toggle("offline", !ok);
  }

  function updateCount() {
    count.textContent = tbody.rows.length + " shown";
  }

  function refreshSparklines() {
    return getJSON(base + "/api/sparklines").then(function (data) {
      document.getElementById("sparklines").innerHTML = data.html;
    });
  }

  function schedule(delay) {
    clearTimeout(timer);
    timer = setTimeout(poll, delay === undefined ? POLL_MS : delay);
  }

  function poll() {
    var mine = generation;
    var params = filterParams();
    if (lastId) params.set("since_id", String(lastId));
    getJSON(base + "/api/records?" + params.toString())
      .then(function (data) {
        if (mine !== generation) return null; // the filters changed meanwhile
        lastId = Math.max(lastId, data.last_id || 0);
        setLive(true);
        if (!data.records.length) return null;
        var fragment = document.createDocumentFragment();
        data.records.forEach(function (item) { fragment.appendChild(makeRow(item)); });
        tbody.insertBefore(fragment, tbody.firstChild);
        while (tbody.rows.length > MAX_ROWS) tbody.deleteRow(-1);
        updateCount();
        return refreshSparklines();
      })
      .catch(function () { if (mine === generation) setLive(false); })
      .then(function () { if (mine === generation) schedule(); });
  }

  function onFilterChange() {
    generation += 1;
    lastId = 0;
    while (tbody.firstChild) tbody.removeChild(tbody.firstChild);
    updateCount();
    var params = filterParams().toString();
    history.replaceState(null, "", base + (params ? "?" + params : ""));
    schedule(0);
  }

  // -- detail view ---------------------------------------------------------------------

  var META = [
    ["event_id", "Event id"], ["kind", "Record"], ["decision_id", "Decision id"],
    ["app", "App"], ["agrees", "Agrees"], ["time", "Time"], ["event", "Event"],
    ["tool_name", "Tool"], ["decision", "Decision"],
    ["reason", "Reason"], ["status", "Status"], ["latency_ms", "Latency (ms)"],
    ["transport", "Transport"], ["error", "Error"], ["principal", "Principal"],
    ["session_id", "Session"], ["trace_id", "Trace"], ["idempotency_key", "Idempotency key"],
    ["app_version", "App version"], ["replica", "Replica"], ["input_digest", "Input digest"],
    ["input_complete", "Input complete"],
  ];

  function pretty(value) {
    return value === undefined || value === null ? "(not recorded)" : JSON.stringify(value, null, 2);
  }

  function handlerText(handler) {
    return handler.name + ": " + (handler.status || "") + ", " +
      (handler.decision || "no decision") + (handler.reason ? " \u2014 " + handler.reason : "") +
      (handler.replayed ? " (replayed)" : "") + (handler.error ? "\n" + handler.error : "") +
      "\n" + pretty(handler.output);
  }

  function showSection(id, text) {
    document.getElementById(id).textContent = text;
    document.getElementById(id).hidden = !text;
    document.getElementById(id + "-title").hidden = !text;
  }

  function showRecord(record) {
    var dl = document.getElementById("detail-meta");
    while (dl.firstChild) dl.removeChild(dl.firstChild);
    META.forEach(function (pair) {
      var value = record[pair[0]];
      if (value === undefined || value === null || value === "") return;
      var dt = document.createElement("dt");
      dt.textContent = pair[1];
      var dd = document.createElement("dd");
      dd.textContent = typeof value === "object" ? JSON.stringify(value) : String(value);
      dl.appendChild(dt);
      dl.appendChild(dd);
    });
    var handlers = (record.handlers || []).filter(function (h) { return h && typeof h === "object"; });
    var names = handlers.map(function (h) { return h.name; }).join(", ");
    document.getElementById("detail-title").textContent =
      (record.event || "Record") + (names ? " \u00b7 " + names : "");
    document.getElementById("detail-input").textContent = pretty(record.input);
    document.getElementById("detail-output").textContent = pretty(record.output);
    showSection("detail-invocations", handlers.map(handlerText).join("\n\n"));
    var shadows = (record.shadows || []).map(function (shadow) {
      return (shadow.app || "candidate") + ": " + (shadow.agrees ? "agrees" : "disagrees") +
        ", " + (shadow.decision || "no decision") +
        (shadow.reason ? " \u2014 " + shadow.reason : "") + "\n" + pretty(shadow.output);
    });
    showSection("detail-shadows", shadows.join("\n\n"));
    detail.hidden = false;
  }

  function openRow(tr) {
    Array.prototype.forEach.call(tbody.querySelectorAll("tr.selected"), function (row) {
      row.classList.remove("selected");
    });
    tr.classList.add("selected");
    var url = base + "/api/record?event_id=" + encodeURIComponent(tr.dataset.eventId);
    getJSON(url).then(function (record) {
      showRecord(record);
    }).catch(function () { /* the poll reports the connection state */ });
  }

  tbody.addEventListener("click", function (event) {
    var tr = event.target.closest("tr");
    if (tr) openRow(tr);
  });
  tbody.addEventListener("keydown", function (event) {
    if (event.key === "Enter" && event.target.matches("tr")) openRow(event.target);
  });
  document.getElementById("detail-close").addEventListener("click", function () {
    detail.hidden = true;
  });
  form.addEventListener("change", onFilterChange);
  form.addEventListener("submit", function (event) { event.preventDefault(); onFilterChange(); });

  schedule(0);
})();
