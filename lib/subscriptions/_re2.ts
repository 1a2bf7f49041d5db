/**
 * The regex engine of filters' `matches()`: RE2 (`@bufbuild/re2`), whose time grows with the
 * text, never exponentially as a backtracking engine's can, within a work budget per evaluation
 * (docs/subscriptions.md#filters). The CEL library's own `matches()` uses JavaScript's engine, so
 * each call is renamed to {@link RE2_METHOD} before evaluation (`_cel.ts`).
 *
 * @module
 */
import type { Environment } from "@marcbachmann/cel-js";
import { RE2JS } from "@bufbuild/re2";

/**
 * Work one evaluation may spend in `matches()`: the pattern's RE2 instructions times the
 * characters it reads, summed over its calls. At worst about 60 ns a unit: 0.12 s.
 */
export const MAX_REGEX_WORK = 2_000_000;

/**
 * The method `matches()` is renamed to before evaluation, registered on the RE2 engine: as long
 * as `matches`, so positions in messages are the user's.
 */
export const RE2_METHOD = "__re2__";

/** Thrown by `matches()` past the evaluation's {@link MAX_REGEX_WORK}. */
export class RegexBudgetError extends Error {}

/**
 * Compiles a pattern as CEL specifies it: RE2 syntax.
 * @param pattern the pattern, as written between the quotes
 * @returns the compiled pattern
 * @throws RE2JSSyntaxException (an Error) for a pattern RE2 refuses, e.g. a backreference
 */
export function compilePattern(pattern: string): RE2JS {
  return RE2JS.compile(pattern);
}

/**
 * An environment like `base` whose {@link RE2_METHOD} runs the compiled patterns on RE2, within
 * `budget`.
 * @param base the environment to extend (it can no longer be changed afterwards)
 * @param patterns the expression's patterns, compiled
 * @param budget the work left to the current evaluation, reset before each
 * @returns the environment
 */
export function re2Environment(
  base: Environment,
  patterns: Map<string, RE2JS>,
  budget: { left: number },
): Environment {
  return base.clone().registerFunction(
    `string.${RE2_METHOD}(string): bool`,
    (text: string, pattern: string) => {
      const regex = patterns.get(pattern) ?? compilePattern(pattern);
      const instructions = regex.re2Input.prog.numInst();
      budget.left -= instructions * text.length;
      if (budget.left < 0) {
        throw new RegexBudgetError(
          `matches(${JSON.stringify(pattern)}) over ${text.length} characters is more work than ` +
            `a filter may do (its ${instructions} RE2 instructions times the characters read, ` +
            `over all its calls, may reach ${MAX_REGEX_WORK})`,
        );
      }
      return regex.test(text);
    },
  );
}
