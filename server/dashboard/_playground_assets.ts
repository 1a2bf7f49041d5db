/**
 * The template playground's script and styles (docs/dashboard.md#template-playground),
 * embedded as the other assets are. The page works without the script (its Render button); the
 * script renders as you type, through `GET /api/playground`, a quarter second after the last
 * key, and puts the answer in with `textContent` only, never parsed as HTML.
 *
 * @module
 */

/** Added to `/assets/app.css`. */
export const PLAYGROUND_STYLE = `
form.playground { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 1.2rem; }
@media (max-width: 900px) { form.playground { grid-template-columns: 1fr; } }
.pg-edit { display: flex; flex-direction: column; gap: .4rem; }
.pg-choices { display: flex; flex-wrap: wrap; gap: .6rem; }
.pg-choices label { display: flex; flex-direction: column; font-size: .8rem; color: var(--muted); }
.pg-choices select { max-width: 100%; }
.pg-edit textarea {
  font: .85rem/1.45 ui-monospace, "SF Mono", Menlo, Consolas, monospace; padding: .5rem;
  border: 1px solid var(--line); border-radius: 6px; background: var(--panel); color: var(--text);
  resize: vertical; width: 100%;
}
.pg-edit button { align-self: start; }
.pg-out h2 { margin-top: 0; }
.pg-out #pg-tokens { font-size: .85rem; font-weight: 400; }
mark.missing { background: var(--failed); color: #fff; border-radius: 3px; padding: 0 .15rem; }
`;

/** `/assets/playground.js`. */
export const PLAYGROUND_SCRIPT = `"use strict";
(() => {
  const form = document.getElementById("playground");
  if (!form) return;
  const template = document.getElementById("pg-template");
  const choices = [document.getElementById("pg-subscription"), document.getElementById("pg-event")];
  const out = {
    text: document.getElementById("pg-text"),
    missing: document.getElementById("pg-missing"),
    tokens: document.getElementById("pg-tokens"),
  };
  let timer = 0;
  let asked = 0;
  // Another subscription or event: the page is drawn again (its events and prompt differ).
  for (const select of choices) if (select) select.addEventListener("change", () => form.submit());
  template.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(render, 250);
  });

  async function render() {
    const query = new URLSearchParams(new FormData(form));
    query.delete("for");
    const mine = ++asked;
    try {
      const response = await fetch("/api/playground?" + query, { credentials: "same-origin" });
      const answer = await response.json();
      if (mine !== asked) return; // a later key already asked again
      if (!response.ok) return show({ text: "", missing: [], error: answer.error });
      show(answer);
    } catch (error) {
      if (mine === asked) show({ text: "", missing: [], error: "Cannot reach the gateway: " + error.message });
    }
  }

  function show(answer) {
    out.text.replaceChildren(...pieces(answer.text, answer.missing));
    out.missing.textContent = answer.error ?? (answer.missing.length
      ? "Missing in the payload: " + answer.missing.map((path) => "{" + path + "}").join(", ")
      : "");
    out.tokens.textContent = answer.error ? "" :
      "≈ " + answer.tokens + " tokens (" + answer.text.length + " characters ÷ 4)";
  }

  // The text as nodes, each placeholder left as written (its path missing) in a <mark>.
  function pieces(text, missing) {
    const marks = new Set(missing.map((path) => "{" + path + "}"));
    const nodes = [];
    let rest = text;
    while (marks.size > 0) {
      let at = -1, found = "";
      for (const mark of marks) {
        const i = rest.indexOf(mark);
        if (i >= 0 && (at < 0 || i < at)) { at = i; found = mark; }
      }
      if (at < 0) break;
      nodes.push(document.createTextNode(rest.slice(0, at)));
      const mark = document.createElement("mark");
      mark.className = "missing";
      mark.textContent = found;
      nodes.push(mark);
      rest = rest.slice(at + found.length);
    }
    nodes.push(document.createTextNode(rest));
    return nodes;
  }
})();
`;
