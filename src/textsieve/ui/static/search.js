// Search as you type, on top of a page that works without it: the results of the same
// GET the form would send are fetched and swapped in; "/" focuses the search box.
"use strict";
(function () {
  const form = document.getElementById("search-form");
  const box = document.getElementById("q");
  document.addEventListener("keydown", function (e) {
    const t = e.target;
    const typing = t instanceof HTMLInputElement || t instanceof HTMLTextAreaElement
      || t instanceof HTMLSelectElement;
    if (e.key === "/" && !typing && box) { e.preventDefault(); box.focus(); box.select(); }
  });
  if (!form || !box) return;
  let timer = 0;
  let seq = 0;
  function update() {
    const params = new URLSearchParams(new FormData(form));
    const url = form.action + "?" + params.toString();
    const mine = ++seq;
    fetch(url, { headers: { "Accept": "text/html" }, credentials: "same-origin" })
      .then(function (r) { return r.text(); })
      .then(function (html) {
        if (mine !== seq) return;  // a later keystroke already asked again
        const doc = new DOMParser().parseFromString(html, "text/html");
        const fresh = doc.getElementById("results");
        const old = document.getElementById("results");
        if (fresh && old) { old.replaceWith(document.importNode(fresh, true)); }
        history.replaceState(null, "", url);
      })
      .catch(function () { /* offline or stopped: the form still submits */ });
  }
  function later() { clearTimeout(timer); timer = setTimeout(update, 150); }
  box.addEventListener("input", later);
  form.addEventListener("change", later);
})();
