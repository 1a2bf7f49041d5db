/**
 * Subscription filters (docs/subscriptions.md#filters): CEL expressions (https://cel.dev) over an
 * event's payload, its fields at the root, and its request's headers under `headers` with
 * lower-case names. They are checked when a subscription is made or config.yaml is read, and
 * evaluated at ingest after the event-type filter: every one must be `true` for the event to be
 * dispatched. An expression that cannot be evaluated on an event (a field it lacks) does not
 * hold. Evaluation is bounded: see `_cel.ts`.
 *
 * @example
 * ```ts
 * filterProblem('pull_request.base.ref = "main"');
 * // 'column 23: Unexpected character: =\n  pull_request.base.ref = "main"\n  …^'
 * const failure = failedFilter(['pull_request.base.ref == "main"'], { payload, headers });
 * // undefined when it holds, else { index: 1, expression, reason: "is false" }
 * ```
 *
 * @module
 */
import { asRecord } from "./payload.ts";
import { type CompiledFilter, compileFilter, FilterProblem, pathValue } from "./_cel.ts";

export { MAX_FILTER_CHARS, MAX_REGEX_WORK } from "./_cel.ts";

/** Most filters one subscription may have. */
export const MAX_FILTERS = 16;

/** An event as filters see it: its parsed payload and its request's headers. */
export interface FilterRequest {
  payload: unknown;
  headers: Headers;
}

/** The first filter of a subscription that does not hold for an event. */
export interface FilterFailure {
  /** Its place in the subscription's `filters`, counted from 1. */
  index: number;
  /** Its text. */
  expression: string;
  /**
   * Why: `is false`; `gives 3, not true or false`; or why it could not be evaluated
   * (`No such key: base`).
   */
  reason: string;
}

/**
 * What is wrong with a filter expression, for a message that points at it.
 * @param expression the CEL text
 * @returns undefined when it compiles; else `column <n>: <what is wrong>`, then the expression
 *   and a caret under the column, each line indented by two spaces
 * @example
 * ```ts
 * filterProblem('labels.exists(l l.name)');
 * // "column 17: Expected RPAREN, got IDENTIFIER\n  labels.exists(l l.name)\n                  ^"
 * ```
 */
export function filterProblem(expression: string): string | undefined {
  try {
    compileFilter(expression);
    return undefined;
  } catch (error) {
    if (!(error instanceof FilterProblem)) throw error;
    // One line of the expression: the caret would not line up under a line break.
    const shown = expression.replace(/[\r\n\t]/g, " ");
    return `column ${error.column}: ${error.message}\n  ${shown}\n  ${
      " ".repeat(error.column - 1)
    }^`;
  }
}

/**
 * The compiled filters of a subscription, kept while its record is: the gateway reads each
 * subscription's `filters` array anew only when the subscription file changes.
 */
const compiled = new WeakMap<readonly string[], (CompiledFilter | FilterProblem)[]>();

/**
 * Evaluates a subscription's filters on an event, in order, until one does not hold.
 * @param filters the subscription's `filters`; absent or empty lets every event through
 * @param request the event's payload and headers
 * @returns the first filter that is not `true` (one that does not compile, in a record edited by
 *   hand, is not either), or undefined when every one is
 */
export function failedFilter(
  filters: readonly string[] | undefined,
  request: FilterRequest,
): FilterFailure | undefined {
  if (!filters?.length) return undefined;
  let programs = compiled.get(filters);
  if (programs === undefined) {
    programs = filters.map((expression) => compileOrProblem(expression));
    compiled.set(filters, programs);
  }
  const variables = filterVariables(request);
  for (const [i, program] of programs.entries()) {
    const expression = filters[i];
    if (program instanceof FilterProblem) {
      return { index: i + 1, expression, reason: `does not compile: ${program.message}` };
    }
    const verdict = program.evaluate(variables);
    if (verdict.ok && verdict.holds) continue;
    const reason = !verdict.ok
      ? `could not be evaluated: ${verdict.reason}`
      : verdict.value === false
      ? "is false"
      : `gives ${shownValue(verdict.value)}, not true or false`;
    return { index: i + 1, expression, reason };
  }
  return undefined;
}

/**
 * The values a filter read on an event, to show why it did not hold: each field path it reads
 * from the root, with its value (JSON, cut at 120 characters) or why it has none.
 * @param expression the filter
 * @param request the event's payload and headers
 * @returns one line per path, e.g. `pull_request.base.ref = "develop"`, or
 *   `pull_request.base = (absent: No such key: base)`; none for an expression that does not
 *   compile
 */
export function filterValues(expression: string, request: FilterRequest): string[] {
  const program = compileOrProblem(expression);
  if (program instanceof FilterProblem) return [];
  const variables = filterVariables(request);
  return program.paths.map((path) => {
    const found = pathValue(path, variables);
    return "value" in found
      ? `${path} = ${shownValue(found.value)}`
      : `${path} = (absent: ${found.absent})`;
  });
}

/** The compiled filter, or its problem. */
function compileOrProblem(expression: string): CompiledFilter | FilterProblem {
  try {
    return compileFilter(expression);
  } catch (error) {
    if (error instanceof FilterProblem) return error;
    throw error;
  }
}

/**
 * What the expressions read: the payload's fields and `headers`, in objects without a
 * prototype, so that `constructor` names no field an event did not send.
 */
function filterVariables({ payload, headers }: FilterRequest): Record<string, unknown> {
  const byName: Record<string, string> = Object.create(null);
  for (const [name, value] of headers) byName[name] = value;
  return Object.assign(Object.create(null), asRecord(payload) ?? {}, { headers: byName });
}

/** A value as JSON (CEL's integers are bigints), cut at 120 characters. */
function shownValue(value: unknown): string {
  const text = JSON.stringify(
    value,
    (_key, item) => typeof item === "bigint" ? Number(item) : item,
  ) ?? String(value);
  return text.length > 120 ? `${text.slice(0, 120)}…` : text;
}
