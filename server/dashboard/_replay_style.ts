/**
 * The style of Replay with changes: its form, and the new answer beside the previous one, the
 * removed lines on the left and the added ones on the right, each tinted; a removed line is also
 * struck through, so the marks do not rest on colour alone.
 *
 * @module
 */

/** Appended to `/assets/app.css`. */
export const REPLAY_STYLE = `
form.replay-form { display: flex; flex-direction: column; gap: .45rem; max-width: 60rem; }
form.replay-form label { color: var(--muted); font-size: .85rem; }
form.replay-form label.render-check { display: block; color: var(--text); }
form.replay-form label.render-check input { min-width: 0; margin: 0 .35rem 0 0; }
form.replay-form textarea {
  font: .85rem/1.45 ui-monospace, "SF Mono", Menlo, Consolas, monospace; padding: .5rem;
  border: 1px solid var(--line); border-radius: 6px; background: var(--panel); color: var(--text);
  resize: vertical; width: 100%;
}
form.replay-form input[name=model] { max-width: 24rem; }
a.button { display: inline-block; }
a.button:hover { text-decoration: none; border-color: var(--link); }
table.answer-diff { table-layout: fixed; }
table.answer-diff col.ln { width: 3.2rem; }
table.answer-diff th { text-transform: none; letter-spacing: 0; font-size: .85rem; }
table.answer-diff td {
  font-family: ui-monospace, "SF Mono", Menlo, Consolas, monospace; font-size: .82em;
  white-space: pre-wrap; word-break: break-word; vertical-align: top; padding: .1rem .5rem;
  border-bottom: 0;
}
table.answer-diff td.ln { color: var(--muted); text-align: right; user-select: none; }
table.answer-diff td.del { background: color-mix(in srgb, var(--failed) 14%, transparent); }
table.answer-diff td.ins { background: color-mix(in srgb, var(--delivered) 14%, transparent); }
table.answer-diff td.none { background: var(--code); }
table.answer-diff del, table.answer-diff ins { text-decoration: none; }
table.answer-diff td.del del { text-decoration: line-through; text-decoration-color: var(--failed); }
table.answer-diff td pre { max-height: none; }
`;
