// Sign out: the session's cookie deleted by POST /logout with the page's CSRF token, then the signed-out page.
"use strict";

(() => {
  const button = document.getElementById("sign-out");
  if (!button) return;
  const csrf = document.querySelector('meta[name="csrf-token"]').getAttribute("content");
  button.addEventListener("click", async () => {
    const reply = await fetch("/logout", {method: "POST", headers: {"X-CSRF-Token": csrf}});
    if (reply.ok) location.assign("/signed-out");
  });
})();
