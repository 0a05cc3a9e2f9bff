// A physician at the table, in the browser (consilium/web/seat.py): send the person's answer with the page's
// CSRF token, show a refusal in red (the run keeps waiting), and follow the run to its next prompt or its end.
(() => {
  "use strict";
  const root = document.getElementById("seat");
  if (!root) return;
  const url = root.dataset.url;
  const csrf = document.querySelector('meta[name="csrf-token"]').content;

  async function post(body) {
    const response = await fetch(url, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
      body: JSON.stringify(body),
    });
    let data = {};
    try { data = await response.json(); } catch (e) { data = { error: `refused (${response.status})` }; }
    return [response.status, data];
  }

  function refused(text) {
    const shown = document.getElementById("seat-error") || document.getElementById("seat-start-error");
    if (shown) { shown.textContent = text; shown.classList.remove("hidden"); }
  }

  // Reload once the run has moved on from what this page shows (a new prompt, working, finished, failed).
  async function follow() {
    for (;;) {
      await new Promise((done) => setTimeout(done, 300));
      try {
        const now = await (await fetch(`${url}?view=state`, { credentials: "same-origin" })).json();
        if (now.state !== root.dataset.state || String(now.turn) !== root.dataset.turn) {
          window.location.reload();
          return;
        }
      } catch (e) { /* the server is busy or restarting: ask again */ }
    }
  }

  function answerOf(form) {
    const kind = form.dataset.kind;
    const value = (name) => (form.elements[name] ? form.elements[name].value : "");
    if (kind === "opinion-free-form") return value("opinion");
    if (kind === "opinion-structured") {
      const sections = {};
      form.querySelectorAll("textarea").forEach((area) => { sections[area.name] = area.value; });
      return sections;
    }
    const chosen = form.querySelector('input[name="vote"]:checked');
    return { vote: chosen ? chosen.value : "", reason: value("reason"), requested_change: value("requested_change") };
  }

  const form = document.getElementById("seat-form");
  if (form) {
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const button = document.getElementById("seat-submit");
      button.disabled = true;
      const [status, data] = await post({ action: "answer", key: form.dataset.key, answer: answerOf(form) });
      if (status === 200) {
        document.getElementById("seat-error").classList.add("hidden");
        document.getElementById("seat-sending").classList.remove("hidden");
        follow();
      } else {
        refused(data.error || `refused (${status})`);
        button.disabled = false;
      }
    });
    form.querySelectorAll("textarea").forEach((area) => {
      const count = form.querySelector(`.seat-count[data-for="${area.id}"]`);
      if (count) area.addEventListener("input", () => { count.textContent = String(area.value.length); });
    });
  }

  const start = document.getElementById("seat-start");
  if (start) {
    start.addEventListener("click", async () => {
      start.disabled = true;
      const [status, data] = await post({ action: "start" });
      if (status === 200) follow();
      else { refused(data.error || `refused (${status})`); start.disabled = false; }
    });
  }

  if (root.dataset.state === "working") follow();
})();
