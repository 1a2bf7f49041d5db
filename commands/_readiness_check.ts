/**
 * One readiness check's finding and the line it is shown as (docs/commands.md#agent-doctor);
 * the checks are in `_readiness.ts` and the modules it names.
 *
 * @module
 */

/** What one check found. */
export interface Check {
  /** True when what was checked is in place. */
  ok: boolean;
  /** What was checked: `agent`, `subscription "gh"`, `address`, `state`, `log`, ... */
  subject: string;
  /**
   * What was found; for a failed check, what is missing and the next step. Commands to run are
   * on lines of their own below it, indented.
   */
  text: string;
  /** A failure stops a subscription from working: `agent doctor` then exits 1. */
  blocking: boolean;
}

/**
 * A check as `agent doctor` prints it.
 * @param check the check
 * @returns `✓ agent: openai, ...` or `✗ agent: OPENAI_API_KEY is not set; ...` (with the
 *   check's indented lines, if any)
 */
export function formatCheck(check: Check): string {
  return `${check.ok ? "✓" : "✗"} ${check.subject}: ${check.text}`;
}

/**
 * A check that passed.
 * @param subject what was checked (`agent`)
 * @param text what was found (`openai, model gpt-4o-mini at ..., OPENAI_API_KEY set`)
 * @returns the check, not blocking
 */
export function passed(subject: string, text: string): Check {
  return { ok: true, subject, text, blocking: false };
}

/**
 * A check that failed.
 * @param subject what was checked (`agent`)
 * @param text what is missing, then the next step
 * @param blocking true when a subscription cannot work until it is fixed
 * @returns the check
 */
export function failed(subject: string, text: string, blocking: boolean): Check {
  return { ok: false, subject, text, blocking };
}
