// The rating page: each criterion's answer is saved as it is given (PUT /api/rate/<rater>/<item> with the
// page's CSRF token), one request at a time per criterion, and its status shown beside it: "saved", or the
// server's error in red. No inline script or style (the studio's Content Security Policy forbids them).
"use strict";

(() => {
  const main = document.getElementById("rating");
  if (!main) return;
  const csrf = document.querySelector('meta[name="csrf-token"]').getAttribute("content");
  const url = `/api/rate/${encodeURIComponent(main.dataset.rater)}/${encodeURIComponent(main.dataset.item)}`;

  function answerOf(fieldset) {
    const chosen = fieldset.querySelector('input[type="radio"]:checked');
    const reason = fieldset.querySelector('input[name="reason"]').value.trim();
    const comment = fieldset.querySelector('textarea[name="comment"]').value.trim();
    if (!chosen) return {wait: comment ? "choose a score (or not evaluable) to save the comment" : ""};
    const notEvaluable = chosen.value === "ne";
    if (notEvaluable && !reason) return {wait: "say why it is not evaluable, to save"};
    return {answer: {criterion: fieldset.dataset.criterion, score: notEvaluable ? null : Number(chosen.value),
                     not_evaluable: notEvaluable, reason: notEvaluable ? reason : null, comment: comment || null}};
  }

  function show(fieldset, text, kind) {
    const status = fieldset.querySelector(".status");
    status.textContent = text;
    status.classList.toggle("error", kind === "error");
    status.classList.toggle("saved", kind === "saved");
  }

  let saving = 0;  // requests in flight, on the page as data-saving (a test waits for 0)

  function busy(change) {
    saving += change;
    main.dataset.saving = String(saving);
  }

  async function send(fieldset, answer) {
    show(fieldset, "saving…", "");
    let reply;
    try {
      reply = await fetch(url, {method: "PUT", headers: {"Content-Type": "application/json", "X-CSRF-Token": csrf},
                                body: JSON.stringify(answer), credentials: "same-origin"});
    } catch (err) {
      show(fieldset, `not saved: the server cannot be reached (${err.message})`, "error");
      return;
    }
    const text = await reply.text();
    let data = {};
    try { data = JSON.parse(text); } catch (err) { data = {error: text}; }
    if (!reply.ok) {
      show(fieldset, `not saved: ${data.error || reply.status + " " + reply.statusText}`, "error");
      return;
    }
    fieldset.classList.add("answered");
    fieldset.classList.remove("unanswered");
    show(fieldset, "saved", "saved");
    document.getElementById("queue-done").textContent = String(data.done);
    document.getElementById("item-done").textContent = data.item_done ? "done" : "not done";
  }

  function save(fieldset) {
    const reasonBox = fieldset.querySelector("label.reason");
    const chosen = fieldset.querySelector('input[type="radio"]:checked');
    reasonBox.classList.toggle("hidden", !(chosen && chosen.value === "ne"));
    const {answer, wait} = answerOf(fieldset);
    if (!answer) {
      show(fieldset, wait, wait ? "error" : "");
      return;
    }
    // One request at a time per criterion, in the order given: the last answer is the one stored.
    busy(1);
    fieldset.pending = (fieldset.pending || Promise.resolve()).then(() => send(fieldset, answer))
      .finally(() => busy(-1));
  }

  for (const fieldset of main.querySelectorAll("fieldset.criterion")) {
    fieldset.addEventListener("change", () => save(fieldset));
    let timer = null;
    fieldset.addEventListener("input", (event) => {
      if (event.target.type === "radio") return;
      clearTimeout(timer);
      timer = setTimeout(() => save(fieldset), 1200);
    });
  }
})();
