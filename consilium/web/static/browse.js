// The cohort index in the page: filter and sort at once (the same rules as the server's query string, which
// the address bar keeps), and follow the cohort while it runs (server-sent events: new rows, the progress line).
"use strict";

(() => {
  const table = document.getElementById("arms");
  if (!table) return;
  const body = table.tBodies[0];
  const form = document.querySelector("form.filters");
  const natural = (a, b) => a.localeCompare(b, undefined, {numeric: true, sensitivity: "base"});
  const NATURAL = ["case", "model", "protocol", "format", "replicate"];
  const state = {sort: "", desc: false};
  const params = new URLSearchParams(location.search);
  state.sort = params.get("sort") || "";
  state.desc = params.get("order") === "desc";

  const field = (name) => form ? form.querySelector(`[data-filter="${name}"]`) : null;
  const value = (name) => { const f = field(name); return f ? f.value : ""; };
  const number = (text) => (text === "" || text === undefined || text === null) ? null : Number(text);

  function keeps(row) {
    for (const name of ["model", "format", "protocol", "status", "stop"]) {
      const wanted = value(name);
      if (wanted && row.dataset[name] !== wanted) return false;
    }
    const low = number(value("min")), high = number(value("max"));
    if (low === null && high === null) return true;
    const rubric = field("rubric");
    const index = rubric ? rubric.selectedIndex : 0;
    const score = number(row.getAttribute(`data-score-${index}`) || "");
    if (score === null || Number.isNaN(score)) return false;
    return (low === null || score >= low) && (high === null || score <= high);
  }

  function cell(row, key) {
    return row.getAttribute("data-" + key.replace(/_/g, "-")) || "";
  }

  function compare(a, b) {
    if (!state.sort) {
      for (const key of NATURAL) {
        const order = natural(cell(a, key), cell(b, key));
        if (order) return order;
      }
      return 0;
    }
    const head = table.querySelector(`th[data-sort="${state.sort}"]`);
    const kind = head ? head.dataset.kind : "text";
    const x = cell(a, state.sort), y = cell(b, state.sort);
    if (x === "" || y === "") return (x === "") - (y === "");  // no value: last, either way
    const order = kind === "number" ? Number(x) - Number(y) : natural(x, y);
    return state.desc ? -order : order;
  }

  function apply() {
    const rows = Array.from(body.rows);
    rows.sort(compare);
    let shown = 0;
    for (const row of rows) {
      body.appendChild(row);
      const keep = keeps(row);
      row.classList.toggle("hidden", !keep);
      shown += keep ? 1 : 0;
    }
    document.getElementById("shown").textContent = String(shown);
    document.getElementById("total").textContent = String(rows.length);
    for (const head of table.querySelectorAll("th.sortable")) {
      const mark = head.querySelector(".mark");
      if (mark) mark.textContent = head.dataset.sort === state.sort ? (state.desc ? " ▼" : " ▲") : "";
    }
    remember();
  }

  function remember() {
    const query = new URLSearchParams();
    if (form) {
      for (const f of form.querySelectorAll("[data-filter]")) {
        if (f.value && !(f.name === "rubric" && !value("min") && !value("max"))) query.set(f.name, f.value);
      }
    }
    if (state.sort) query.set("sort", state.sort);
    if (state.sort && state.desc) query.set("order", "desc");
    const text = query.toString();
    history.replaceState(null, "", text ? `?${text}` : location.pathname);
  }

  if (form) {
    form.addEventListener("input", apply);
    form.addEventListener("change", apply);
    form.addEventListener("submit", (event) => { event.preventDefault(); apply(); });
    for (const keep of form.querySelectorAll("[data-keep]")) keep.remove();  // the page keeps its own order
  }
  for (const head of table.querySelectorAll("th.sortable")) {
    head.addEventListener("click", (event) => {
      event.preventDefault();
      const key = head.dataset.sort;
      state.desc = state.sort === key ? !state.desc : false;
      state.sort = key;
      apply();
    });
  }

  function offer(row) {  // a new row's model, format, … joins its filter's choices
    for (const name of ["model", "format", "protocol", "status", "stop"]) {
      const select = field(name), text = row.dataset[name];
      if (!select || !text) continue;
      if (!Array.from(select.options).some((o) => o.value === text)) {
        const option = document.createElement("option");
        option.value = text;
        option.textContent = text;
        select.appendChild(option);
      }
    }
  }

  const run = table.dataset.run, known = table.dataset.known;
  if (window.EventSource) {
    const source = new EventSource(`/runs/${run}/events?known=${known}`);
    source.addEventListener("arm", (event) => {
      const data = JSON.parse(event.data);
      const holder = document.createElement("tbody");
      holder.innerHTML = data.html;  // the server's row: every value escaped there
      const row = holder.rows[0];
      if (!row) return;
      const old = Array.from(body.rows).find((r) => r.dataset.id === data.id);
      if (old) old.replaceWith(row); else body.appendChild(row);
      offer(row);
      apply();
    });
    source.addEventListener("progress", (event) => {
      const data = JSON.parse(event.data);
      document.getElementById("progress").textContent = data.text;
    });
    source.addEventListener("reload", () => { source.close(); location.reload(); });
  }
  apply();
})();
