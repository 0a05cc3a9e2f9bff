// The new-study form: posted as JSON with the page's CSRF token; a refusal shown in red (the field named, as
// `consilium study create` names its flag); the private links shown once, in the page only.
"use strict";

(() => {
  const form = document.getElementById("new-study");
  if (!form) return;
  const csrf = document.querySelector('meta[name="csrf-token"]').getAttribute("content");
  const status = document.getElementById("new-study-status");

  function say(text, error) {
    status.textContent = text;
    status.classList.toggle("error", Boolean(error));
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const data = Object.fromEntries(new FormData(form).entries());
    say("creating…", false);
    let reply;
    try {
      reply = await fetch(`/runs/${encodeURIComponent(form.dataset.run)}/study`, {
        method: "POST", headers: {"Content-Type": "application/json", "X-CSRF-Token": csrf},
        body: JSON.stringify(data)});
    } catch (error) {
      say(`not created: ${error}`, true);
      return;
    }
    const json = (reply.headers.get("Content-Type") || "").includes("json");
    const body = json ? await reply.json() : {error: await reply.text()};
    if (!reply.ok) {
      say(`not created: ${body.error || reply.status}`, true);
      return;
    }
    const notes = body.notes.length ? ` (${body.notes.join("; ")})` : "";
    say(`created: ${body.outputs} outputs, ${body.assignments} assignments${notes}`, false);
    const rows = document.querySelector("#links tbody");
    rows.replaceChildren();
    for (const [who, link] of Object.entries(body.links)) {
      const row = document.createElement("tr");
      row.dataset.who = who;
      const name = document.createElement("th");
      name.textContent = who;
      const cell = document.createElement("td");
      cell.textContent = link;
      row.append(name, cell);
      rows.append(row);
    }
    document.getElementById("study-page").setAttribute("href", body.study);
    document.getElementById("new-study-links").classList.remove("hidden");
    form.classList.add("hidden");
  });
})();
