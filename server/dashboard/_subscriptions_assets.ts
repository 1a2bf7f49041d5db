/**
 * The subscriptions pages' styles, served within `/assets/app.css`: embedded in the program, as
 * every asset of the dashboard is.
 *
 * @module
 */

/** The styles of the subscriptions pages' table and forms. */
export const SUBSCRIPTIONS_STYLE = `
#subscriptions td { vertical-align: top; }
#subscriptions td.counts { white-space: nowrap; }
form.sub-form, form.sub-test {
  display: grid; gap: .7rem; max-width: 52rem; padding: .9rem 1rem; margin-top: 1rem;
  background: var(--panel); border: 1px solid var(--line); border-radius: 8px;
}
form.sub-form fieldset {
  display: grid; gap: .7rem; border: 1px solid var(--line); border-radius: 8px; margin: 0;
  padding: .6rem .9rem .9rem;
}
form.sub-form legend { color: var(--muted); padding: 0 .3rem; }
label.field { display: grid; gap: .2rem; }
label.field > span { font-weight: 600; }
label.check { display: flex; gap: .4rem; align-items: center; }
label.check input { min-width: 0; }
code.flag { font-weight: 400; color: var(--muted); font-size: .8em; }
textarea {
  font: .9em/1.4 ui-monospace, "SF Mono", Menlo, Consolas, monospace; padding: .4rem .5rem;
  border: 1px solid var(--line); border-radius: 6px; background: var(--bg); color: var(--text);
  width: 100%;
}
form.sub-test h2 { margin: 0; }
form.sub-form input:not([type=checkbox]), form.sub-test input { width: 100%; }
.notice pre.notice-text { background: transparent; padding: 0; margin: 0; max-height: none; }
.notice ul { margin: .5rem 0 0; padding-left: 1.2rem; }
`;
