// The study page: progress and agreement polled every few seconds from /api/study/<n>/agreement (so the
// figures move as raters answer, without a reload); a rater's link revoked or issued again by POST with the
// page's CSRF token, the new link shown once in the page.
"use strict";

(() => {
  const main = document.getElementById("study");
  if (!main) return;
  const csrf = document.querySelector('meta[name="csrf-token"]').getAttribute("content");
  const base = `/api/study/${encodeURIComponent(main.dataset.study)}`;
  const status = document.getElementById("admin-status");
  const POLL_MS = 3000;

  function say(text, error) {
    status.textContent = text;
    status.classList.toggle("error", Boolean(error));
  }

  function render(data) {
    for (const [key, text] of Object.entries(data.shown)) {
      const cell = main.querySelector(`[data-figure="${key}"]`);
      if (cell) cell.textContent = text;
    }
    for (const p of data.progress) {
      const row = main.querySelector(`#progress tr[data-rater="${CSS.escape(p.rater)}"]`);
      if (!row) continue;
      row.querySelector(".assigned").textContent = String(p.assigned);
      row.querySelector(".done").textContent = String(p.done);
      const bar = row.querySelector("progress");
      bar.max = p.assigned;
      bar.value = p.done;
      const link = row.querySelector(".link-state");
      link.textContent = p.revoked ? "revoked" : "live";
      link.classList.toggle("failed", p.revoked);
    }
    document.getElementById("updated").textContent = new Date().toLocaleTimeString();
  }

  async function poll() {
    try {
      const reply = await fetch(`${base}/agreement`, {credentials: "same-origin"});
      if (!reply.ok) throw new Error(`${reply.status} ${reply.statusText}`);
      render(await reply.json());
      if (status.classList.contains("error")) say("", false);
    } catch (err) {
      say(`could not update the figures: ${err.message}`, true);
    }
  }

  async function post(path) {
    const reply = await fetch(`${base}${path}`, {method: "POST", credentials: "same-origin",
                                                 headers: {"X-CSRF-Token": csrf}});
    const text = await reply.text();
    let data = {};
    try { data = JSON.parse(text); } catch (err) { data = {error: text}; }
    if (!reply.ok) throw new Error(data.error || `${reply.status} ${reply.statusText}`);
    return data;
  }

  main.addEventListener("click", async (event) => {
    const button = event.target.closest("button[data-rater]");
    if (!button) return;
    const rater = button.dataset.rater;
    const path = `/raters/${encodeURIComponent(rater)}`;
    try {
      if (button.classList.contains("revoke")) {
        await post(`${path}/revoke`);
        say(`${rater}'s link is revoked: it opens nothing now.`, false);
      } else {
        const data = await post(`${path}/link`);
        document.getElementById("new-link-rater").textContent = rater;
        document.getElementById("new-link").textContent = data.link;
        document.getElementById("new-link-box").classList.remove("hidden");
        say(`${rater} has a new link; the old one opens nothing now.`, false);
      }
    } catch (err) {
      say(`not done: ${err.message}`, true);
    }
    poll();
  });

  setInterval(poll, POLL_MS);
})();
