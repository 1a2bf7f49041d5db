/**
 * One subscription filter compiled from CEL (https://cel.dev, by `@marcbachmann/cel-js`), with
 * what keeps its evaluation bounded (docs/subscriptions.md#filters): the parser's size limits, the
 * tree's rules (`_cel_rules.ts`: a literal, valid RE2 pattern for `matches()`, macros that read
 * only their own variables), and `matches()` run on RE2 within a work budget (`_re2.ts`).
 *
 * @module
 */
import { Environment, EvaluationError, ParseError, type ParseResult } from "@marcbachmann/cel-js";
import { FilterProblem, walkTree } from "./_cel_rules.ts";
import { MAX_REGEX_WORK, RE2_METHOD, re2Environment, RegexBudgetError } from "./_re2.ts";

export { FilterProblem } from "./_cel_rules.ts";
export { MAX_REGEX_WORK } from "./_re2.ts";

/** Longest filter expression, in characters. */
export const MAX_FILTER_CHARS = 1_000;

/** The structural limits of the parser (cel-js `limits`). */
const LIMITS = {
  maxAstNodes: 200,
  maxDepth: 32,
  maxListElements: 100,
  maxMapEntries: 100,
  maxCallArguments: 8,
};

/** Every identifier is a payload field or `headers`; none is declared. */
const BASE = new Environment({ unlistedVariablesAreDyn: true, limits: LIMITS });

/** The outcome of one evaluation: the filter's verdict, or why there is none. */
export type Verdict = { ok: true; holds: boolean; value: unknown } | { ok: false; reason: string };

/** A compiled filter. */
export interface CompiledFilter {
  /**
   * Evaluates the filter over `variables` (the payload's fields and `headers`).
   * @returns the verdict: `holds` only for `true`; a reason for an evaluation error
   */
  evaluate(variables: Record<string, unknown>): Verdict;
  /** The field paths it reads at the root (`pull_request.base.ref`), in order, once each. */
  paths: string[];
}

/**
 * Compiles one filter expression.
 * @param expression the CEL text
 * @returns the compiled filter
 * @throws FilterProblem for a syntax error, a type error, an invalid or non-literal `matches()`
 *   pattern, a macro that reads outside its variables, or too large an expression
 */
export function compileFilter(expression: string): CompiledFilter {
  if (expression.trim() === "") throw new FilterProblem("it is empty", 1);
  if (expression.length > MAX_FILTER_CHARS) {
    throw new FilterProblem(`it is longer than ${MAX_FILTER_CHARS} characters`, 1);
  }
  const parsed = parseWith(BASE, expression);
  const walk = walkTree(parsed.ast);
  const budget = { left: MAX_REGEX_WORK };
  const env = walk.patterns.size === 0 ? BASE : re2Environment(BASE, walk.patterns, budget);
  const program = walk.patterns.size === 0
    ? parsed
    : parseWith(env, renamed(expression, walk.matchesAt));
  checkType(program);
  return {
    paths: walk.paths,
    evaluate(variables) {
      budget.left = MAX_REGEX_WORK;
      try {
        const value = program(variables);
        return { ok: true, holds: value === true, value };
      } catch (error) {
        return { ok: false, reason: evaluationReason(error) };
      }
    },
  };
}

/**
 * Evaluates a field path a filter reads (see `CompiledFilter.paths`), for explanations.
 * @param path e.g. `pull_request.base.ref`
 * @param variables the payload's fields and `headers`
 * @returns the value, or why there is none (`No such key: base`)
 */
export function pathValue(
  path: string,
  variables: Record<string, unknown>,
): { value: unknown } | { absent: string } {
  try {
    return { value: BASE.parse(path)(variables) };
  } catch (error) {
    return { absent: evaluationReason(error) };
  }
}

/** Parses with `env`, turning its syntax error into a {@link FilterProblem}. */
function parseWith(env: Environment, expression: string): ParseResult {
  try {
    return env.parse(expression);
  } catch (error) {
    if (!(error instanceof ParseError)) throw error;
    throw new FilterProblem(error.summary, (error.range?.start ?? 0) + 1);
  }
}

/** Refuses an expression whose type is known and is not `bool` (`size(x) + 1`). */
function checkType(program: ParseResult): void {
  const checked = program.check();
  if (!checked.valid) {
    const error = checked.error;
    throw new FilterProblem(
      (error as { summary?: string } | undefined)?.summary ?? error?.message ?? "type error",
      (error?.range?.start ?? 0) + 1,
    );
  }
  if (checked.type !== "bool" && checked.type !== "dyn") {
    throw new FilterProblem(
      `it gives ${checked.type}, where a bool (true or false) is expected`,
      1,
    );
  }
}

/** An error of an evaluation as a reason: the library's summary, or our own message. */
function evaluationReason(error: unknown): string {
  if (error instanceof EvaluationError) return error.summary;
  if (error instanceof RegexBudgetError) return error.message;
  return (error as Error).message;
}

/** The text with each `matches` method name at `positions` replaced by {@link RE2_METHOD}. */
function renamed(expression: string, positions: number[]): string {
  let text = expression;
  for (const at of positions) {
    text = text.slice(0, at) + RE2_METHOD + text.slice(at + RE2_METHOD.length);
  }
  // A `matches` that was not where it was looked for would stay on JavaScript's engine.
  const again = walkTree(BASE.parse(text.replaceAll(RE2_METHOD, "re2_ok_")).ast);
  if (again.matchesAt.length > 0 || positions.length !== countOf(text, RE2_METHOD)) {
    throw new FilterProblem('write matches() as text.matches("pattern")', positions[0] + 1);
  }
  return text;
}

/** How many times `part` occurs in `text`. */
function countOf(text: string, part: string): number {
  return text.split(part).length - 1;
}
