/**
 * An event's new answer beside the previous one, as a line diff drawn on the server
 * (docs/dashboard.md#replay-with-changes): once a replay's run has answered, the page shows what
 * changed, without a script. Each answer is on its attempt row, so nothing more is stored.
 *
 * @module
 */
import { diffLines } from "diff";
import type { NumberedAttempt } from "./_format.ts";

/**
 * The most lines a diff may add and remove together: past it the answers are shown whole, side
 * by side, so that two long and unrelated answers cannot hold the gateway's event loop.
 */
export const MAX_EDIT_LINES = 1_000;

/** Two answered attempts of an event, from two series: the newest answer and the one before. */
export interface AnswerPair {
  previous: NumberedAttempt & { answer: string };
  latest: NumberedAttempt & { answer: string };
}

/**
 * The answers to compare: the newest one, and the newest of an earlier series (a replay starts a
 * new series; a delivery retry within one does not run the agent again).
 * @param attempts the event's attempts, oldest first, numbered by series
 * @returns the pair; undefined until a replay's run has answered
 */
export function answersToCompare(attempts: NumberedAttempt[]): AnswerPair | undefined {
  const answered = attempts.filter((a): a is AnswerPair["latest"] => a.answer !== null);
  const latest = answered.at(-1);
  if (!latest) return undefined;
  const previous = answered.findLast((attempt) => attempt.series < latest.series);
  return previous && { previous, latest };
}

/** One row of the side-by-side diff: a line of each answer, either absent where none faces it. */
export interface DiffRow {
  /** The previous answer's line and its number, from 1; absent where a line was added. */
  left?: { number: number; text: string };
  /** The new answer's line and its number, from 1; absent where a line was removed. */
  right?: { number: number; text: string };
  /** Whether the line is in both answers. */
  same: boolean;
}

/**
 * The line diff of two texts as side-by-side rows: a run of removed lines faces the run of
 * added lines that replaced it.
 * @param before the previous answer
 * @param after the new answer
 * @returns the rows; undefined when the texts differ by more than {@link MAX_EDIT_LINES} lines
 * @example
 * ```ts
 * sideBySide("a\nb", "a\nc");
 * // [{ left: { number: 1, text: "a" }, right: { number: 1, text: "a" }, same: true },
 * //  { left: { number: 2, text: "b" }, right: { number: 2, text: "c" }, same: false }]
 * ```
 */
export function sideBySide(before: string, after: string): DiffRow[] | undefined {
  // A last line without a newline is still a line: both end in one, so it compares equal.
  const changes = diffLines(`${before}\n`, `${after}\n`, { maxEditLength: MAX_EDIT_LINES });
  if (!changes) return undefined;
  const rows: DiffRow[] = [];
  let removed: string[] = [];
  let added: string[] = [];
  let leftNumber = 0;
  let rightNumber = 0;
  const flush = () => {
    for (let i = 0; i < Math.max(removed.length, added.length); i++) {
      rows.push({
        ...(i < removed.length ? { left: { number: ++leftNumber, text: removed[i] } } : {}),
        ...(i < added.length ? { right: { number: ++rightNumber, text: added[i] } } : {}),
        same: false,
      });
    }
    removed = [];
    added = [];
  };
  for (const change of changes) {
    const lines = change.value.replace(/\n$/, "").split("\n");
    if (change.removed) removed.push(...lines);
    else if (change.added) added.push(...lines);
    else {
      flush();
      for (const text of lines) {
        rows.push({
          left: { number: ++leftNumber, text },
          right: { number: ++rightNumber, text },
          same: true,
        });
      }
    }
  }
  flush();
  return rows;
}

/** The comparison section: the two answers side by side, the lines that changed marked. */
export function AnswerComparison(props: { pair: AnswerPair }) {
  const { previous, latest } = props.pair;
  const rows = sideBySide(previous.answer, latest.answer);
  return (
    <section class="block" id="comparison">
      <h2>New answer beside the previous one</h2>
      <p class="muted" id="comparison-summary">{summary(rows)}</p>
      <table class="answer-diff">
        <colgroup>
          <col class="ln" />
          <col />
          <col class="ln" />
          <col />
        </colgroup>
        <thead>
          <tr>
            <th colspan={2}>Previous: series {String(previous.series)} · {modelOf(previous)}</th>
            <th colspan={2}>New: series {String(latest.series)} · {modelOf(latest)}</th>
          </tr>
        </thead>
        <tbody>
          {rows ? rows.map((row, i) => <Row key={i} row={row} />) : (
            <tr>
              <td colspan={2}>
                <pre>{previous.answer}</pre>
              </td>
              <td colspan={2}>
                <pre>{latest.answer}</pre>
              </td>
            </tr>
          )}
        </tbody>
      </table>
    </section>
  );
}

/** One row: each side's line number and text, a changed line marked `<del>` or `<ins>`. */
function Row(props: { row: DiffRow }) {
  const { left, right, same } = props.row;
  return (
    <tr class={same ? "same" : "changed"}>
      <td class="ln">{left ? String(left.number) : ""}</td>
      <td class={left ? (same ? "line" : "line del") : "line none"}>
        {left && (same ? left.text : <del>{left.text}</del>)}
      </td>
      <td class="ln">{right ? String(right.number) : ""}</td>
      <td class={right ? (same ? "line" : "line ins") : "line none"}>
        {right && (same ? right.text : <ins>{right.text}</ins>)}
      </td>
    </tr>
  );
}

/** What the diff says in a sentence: how many lines went and came, or that nothing changed. */
function summary(rows: DiffRow[] | undefined): string {
  if (!rows) {
    return `The answers differ by more than ${MAX_EDIT_LINES} lines: shown whole, side by side.`;
  }
  const removed = rows.filter((row) => !row.same && row.left).length;
  const added = rows.filter((row) => !row.same && row.right).length;
  if (removed === 0 && added === 0) return "The new answer is the same as the previous one.";
  return `${lines(removed)} removed, ${lines(added)} added.`;
}

/** `1 line`, `3 lines`. */
function lines(count: number): string {
  return `${count} ${count === 1 ? "line" : "lines"}`;
}

/** The model that answered, as the endpoint named it. */
function modelOf(attempt: NumberedAttempt): string {
  return attempt.run?.model ?? "model not named";
}
