// Hindsight dashboard: small progressive enhancements. Every page works
// without this file; it adds copy buttons, "select all" and confirmations.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  // Copy buttons: <button data-copy="input-id">.
  for (const btn of document.querySelectorAll("[data-copy]")) {
    btn.addEventListener("click", async () => {
      const input = document.getElementById(btn.dataset.copy);
      const note = document.querySelector(`[data-copied-for="${btn.dataset.copy}"]`);
      input.select();
      let ok = false;
      try {
        await navigator.clipboard.writeText(input.value);
        ok = true;
      } catch (e) {
        ok = document.execCommand && document.execCommand("copy");
      }
      if (note) note.textContent = ok ? "Copied." : "Press Ctrl+C (⌘C) to copy.";
    });
  }
  for (const input of document.querySelectorAll("[data-select-on-focus]")) {
    input.addEventListener("focus", () => input.select());
  }
  // "Select all in this view": <input type=checkbox data-select-all="name">.
  for (const all of document.querySelectorAll("[data-select-all]")) {
    const boxes = () => all.form.querySelectorAll(`input[type=checkbox][name="${all.dataset.selectAll}"]`);
    all.addEventListener("change", () => {
      for (const b of boxes()) b.checked = all.checked;
    });
    for (const b of boxes()) {
      b.addEventListener("change", () => {
        if (!b.checked) all.checked = false;
        else if ([...boxes()].every((x) => x.checked)) all.checked = true;
      });
    }
  }
  // Confirm destructive forms: <form data-confirm="...">.
  for (const form of document.querySelectorAll("form[data-confirm]")) {
    form.addEventListener("submit", (e) => {
      if (!window.confirm(form.dataset.confirm)) e.preventDefault();
    });
  }
});
