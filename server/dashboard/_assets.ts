/**
 * The dashboard's style sheet and script, as string constants: every asset is part of the
 * program, so a compiled `agent` needs no file beside it and the pages load nothing from
 * elsewhere. The pages work without the script; it only adds the live updates.
 *
 * @module
 */
import { PAGE_SIZE } from "./_events_page.tsx";

/** `/assets/app.css`. */
export const STYLE_SHEET = `
:root {
  color-scheme: light dark;
  --bg: #f7f7f8; --panel: #fff; --text: #1d1d20; --muted: #65656d; --line: #e2e2e6;
  --link: #1f5fbf; --queued: #8a6d00; --running: #1f5fbf; --delivered: #1b7f3b;
  --failed: #b3261e; --code: #f1f1f4; --new: #fff6cc;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #151518; --panel: #1d1d21; --text: #e6e6ea; --muted: #9a9aa3; --line: #33333a;
    --link: #7fb0ff; --queued: #e0c25a; --running: #7fb0ff; --delivered: #6fd08c;
    --failed: #ff8a80; --code: #25252b; --new: #3a3620;
  }
}
* { box-sizing: border-box; }
body {
  margin: 0; background: var(--bg); color: var(--text);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
}
a { color: var(--link); text-decoration: none; }
a:hover { text-decoration: underline; }
header.top {
  display: flex; align-items: center; gap: 1.5rem; padding: .6rem 1.5rem;
  background: var(--panel); border-bottom: 1px solid var(--line);
}
header.top .brand { font-weight: 700; }
header.top nav { display: flex; gap: 1rem; flex: 1; }
header.top form { margin: 0; }
main { padding: 1.2rem 1.5rem 3rem; max-width: 1400px; }
h1 { font-size: 1.35rem; margin: 0 0 1rem; display: flex; align-items: center; gap: .6rem; }
h2 { font-size: 1.05rem; margin: 1.6rem 0 .6rem; }
.muted { color: var(--muted); }
.live { font-size: .75rem; font-weight: 600; color: var(--delivered); }
.live::before { content: "● "; }
button, .button {
  font: inherit; padding: .35rem .8rem; border-radius: 6px; cursor: pointer;
  border: 1px solid var(--line); background: var(--panel); color: var(--text);
}
button.primary { background: var(--link); border-color: var(--link); color: #fff; }
button:disabled { opacity: .5; cursor: not-allowed; }
form.filters {
  display: flex; flex-wrap: wrap; gap: .6rem; align-items: end; margin-bottom: 1rem;
  padding: .8rem; background: var(--panel); border: 1px solid var(--line); border-radius: 8px;
}
form.filters label { display: flex; flex-direction: column; font-size: .8rem; color: var(--muted); }
input, select {
  font: inherit; padding: .3rem .45rem; border: 1px solid var(--line); border-radius: 6px;
  background: var(--bg); color: var(--text); min-width: 10rem;
}
table {
  width: 100%; border-collapse: collapse; background: var(--panel);
  border: 1px solid var(--line); border-radius: 8px; overflow: hidden;
}
th, td { text-align: left; padding: .45rem .7rem; border-bottom: 1px solid var(--line); }
th { font-size: .75rem; text-transform: uppercase; letter-spacing: .03em; color: var(--muted); }
td.mono, .mono { font-family: ui-monospace, "SF Mono", Menlo, Consolas, monospace; font-size: .85em; }
tr.new td { animation: arrive 2.5s ease-out; }
@keyframes arrive { from { background: var(--new); } to { background: transparent; } }
.status { font-weight: 600; text-transform: capitalize; }
.status-queued { color: var(--queued); }
.status-running { color: var(--running); }
.status-delivered { color: var(--delivered); }
.status-failed { color: var(--failed); }
.error-text { color: var(--failed); }
.pager { display: flex; gap: 1rem; margin-top: .8rem; }
.empty td { color: var(--muted); text-align: center; padding: 1.5rem; }
dl.facts {
  display: grid; grid-template-columns: max-content 1fr; gap: .3rem 1.2rem; margin: 0;
  padding: .9rem 1rem; background: var(--panel); border: 1px solid var(--line); border-radius: 8px;
}
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; }
dl.run-facts { border: 0; padding: .2rem 0 .4rem; background: transparent; }
#headers th { text-transform: none; letter-spacing: 0; color: var(--text); width: 30%; }
#received details { margin-top: .6rem; }
section.block {
  background: var(--panel); border: 1px solid var(--line); border-radius: 8px;
  padding: .2rem 1rem .9rem; margin-top: 1rem;
}
pre {
  background: var(--code); padding: .7rem .9rem; border-radius: 6px; overflow: auto;
  white-space: pre-wrap; word-break: break-word; max-height: 32rem; margin: .4rem 0 0;
}
details > summary { cursor: pointer; }
.json { font-family: ui-monospace, "SF Mono", Menlo, Consolas, monospace; font-size: .85em; }
.json details { margin-left: 1.1rem; }
.json > details { margin-left: 0; }
.json summary { color: var(--muted); }
.json dl, .json ol { margin: 0; padding-left: 1.1rem; }
.json dl > div { display: flex; gap: .4rem; }
.json dt { color: var(--link); }
.json dt::after { content: ":"; color: var(--muted); }
.json dd { margin: 0; }
.json .str { color: var(--delivered); word-break: break-word; }
.json .num, .json .lit { color: var(--queued); }
.notice {
  padding: .7rem 1rem; border-radius: 8px; margin-bottom: 1rem;
  background: var(--panel); border: 1px solid var(--line);
}
.notice.ok { border-left: 4px solid var(--delivered); }
.notice.bad { border-left: 4px solid var(--failed); }
.actions { display: flex; gap: .6rem; margin: 1rem 0; }
.actions form { margin: 0; }
.center { max-width: 36rem; margin: 12vh auto; }
.center code { background: var(--code); padding: .1rem .35rem; border-radius: 4px; }
`;

/**
 * `/assets/app.js`: the live updates. The page names its stream in `data-stream`; each
 * `change` message is an event summary (see `eventSummary`): the events page puts it in its
 * table, in place of the row it had or, when its status filter (`data-status`) takes it, as a
 * new row, the rows past the first page dropped; an event's page reloads to show the new
 * story. Text goes in through `textContent` only, never parsed as HTML.
 */
export const LIVE_SCRIPT = `"use strict";
(() => {
  const body = document.body;
  const streamUrl = body.dataset.stream;
  if (!streamUrl || !("EventSource" in window)) return;
  const live = document.getElementById("live");
  const source = new EventSource(streamUrl);
  source.addEventListener("open", () => { if (live) live.hidden = false; });
  source.addEventListener("error", () => { if (live) live.hidden = true; });
  source.addEventListener("end", () => { source.close(); location.reload(); });
  source.addEventListener("change", (message) => {
    const event = JSON.parse(message.data);
    if (body.dataset.page === "event") {
      if (event.id === body.dataset.eventId) location.reload();
      return;
    }
    showRow(event);
  });

  function showRow(event) {
    const tbody = document.querySelector("#events tbody");
    if (!tbody) return;
    const fresh = rowOf(event);
    const old = Array.from(tbody.rows).find((row) => row.dataset.id === event.id);
    if (old) {
      old.replaceWith(fresh);
      return;
    }
    // A row shown changes status in place; a new one joins only if the page's status
    // filter takes it.
    const wanted = body.dataset.status;
    if (wanted && event.status !== wanted) return;
    const empty = tbody.querySelector("tr.empty");
    if (empty) empty.remove();
    fresh.classList.add("new");
    const older = Array.from(tbody.rows).find((row) => row.dataset.id < event.id);
    tbody.insertBefore(fresh, older || null);
    keepFirstPage(tbody);
  }

  // The page stays the first page, as the server sends it: rows pushed off it go, and
  // "Older" then starts after the last row kept.
  function keepFirstPage(tbody) {
    if (tbody.rows.length <= ${PAGE_SIZE}) return;
    while (tbody.rows.length > ${PAGE_SIZE}) tbody.rows[tbody.rows.length - 1].remove();
    const last = tbody.rows[tbody.rows.length - 1].dataset.id;
    const params = new URLSearchParams(location.search);
    params.set("before", last);
    let link = document.querySelector(".pager a[href*='before=']");
    if (!link) {
      link = document.createElement("a");
      link.textContent = "Older »";
      document.querySelector(".pager")?.append(link);
    }
    link.href = "/events?" + params.toString();
  }

  function rowOf(event) {
    const row = document.createElement("tr");
    row.dataset.id = event.id;
    const link = document.createElement("a");
    link.href = "/events/" + encodeURIComponent(event.id);
    link.textContent = event.received;
    cell(row, "mono").append(link);
    cell(row).textContent = event.subscription;
    cell(row, "mono").textContent = event.event;
    cell(row, "mono").textContent = event.delivery_id;
    const status = cell(row, "status status-" + event.status);
    status.textContent = event.status;
    if (event.last_error) status.title = event.last_error;
    cell(row).textContent = String(event.attempts);
    cell(row).textContent = event.took;
    return row;
  }

  function cell(row, className) {
    const td = row.insertCell();
    if (className) td.className = className;
    return td;
  }
})();
`;
