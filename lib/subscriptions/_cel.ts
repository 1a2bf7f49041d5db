/**
 * One subscription filter compiled from CEL (https://cel.dev, by `@marcbachmann/cel-js`), with
 * the rules that keep its evaluation bounded (docs/subscriptions.md#filters): `matches()` runs on
 * an RE2 engine (`@bufbuild/re2`, linear in the text) within a work budget, its pattern is a
 * literal checked here, and a macro (`exists`, `all`, `map`...) reads only its own variables.
 *
 * @module
 */
import {
  type ASTNode,
  Environment,
  EvaluationError,
  ParseError,
  type ParseResult,
} from "@marcbachmann/cel-js";
import { RE2JS } from "@bufbuild/re2";

/** Longest filter expression, in characters. */
export const MAX_FILTER_CHARS = 1_000;

/**
 * Work one evaluation may spend in `matches()`: the pattern's RE2 instructions times the
 * characters it reads, summed over its calls. At worst about 60 ns a unit: 0.12 s.
 */
export const MAX_REGEX_WORK = 2_000_000;

/** Macros nested in macros, at most: each level can multiply the work by a list's length. */
const MAX_MACRO_NESTING = 2;

/** The macros that bind variables: every argument but the last names one, `map`'s first only. */
const MACROS = new Set(["all", "exists", "exists_one", "map", "filter"]);

/**
 * The method `matches()` is renamed to before evaluation, registered on the RE2 engine: as long
 * as `matches`, so positions in messages are the user's.
 */
const RE2_METHOD = "__re2__";

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

/** What is wrong with an expression, and where: `column` counts from 1. */
export class FilterProblem extends Error {
  /** Where the mistake is, counted from 1. */
  readonly column: number;
  /**
   * @param message what is wrong and, for a syntax error, what was expected
   * @param column where, counted from 1
   */
  constructor(message: string, column: number) {
    super(message);
    this.name = "FilterProblem";
    this.column = column;
  }
}

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
  const env = walk.patterns.size === 0 ? BASE : re2Environment(walk.patterns, budget);
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

/** What {@link walkTree} finds in a tree. */
interface Walk {
  /** The `matches()` patterns, compiled. */
  patterns: Map<string, RE2JS>;
  /** Where each `matches` method name starts, in the text. */
  matchesAt: number[];
  /** The root field paths read, in order, once each. */
  paths: string[];
}

/**
 * Checks the tree's rules and gathers its patterns and paths.
 * @throws FilterProblem where a rule is broken
 */
function walkTree(root: ASTNode): Walk {
  const walk: Walk = { patterns: new Map(), matchesAt: [], paths: [] };
  const visit = (node: ASTNode, bound: ReadonlySet<string>, nesting: number): void => {
    const path = rootPath(node, bound);
    if (path !== undefined && nesting > 0) {
      throw new FilterProblem(
        `${path} is read inside a macro (exists, all, map...), which may read only its own ` +
          "variables: compare with literals there, or test the field outside the macro",
        node.start + 1,
      );
    }
    if (path !== undefined) {
      if (!walk.paths.includes(path)) walk.paths.push(path);
      return;
    }
    if (node.op === "id") {
      if (node.args === RE2_METHOD) throw reserved(node);
      return; // a macro's variable
    }
    if (node.op === "rcall" || node.op === "call") {
      const name = node.args[0];
      if (name === RE2_METHOD) throw reserved(node);
      if (node.op === "rcall" && name === "matches") {
        walk.matchesAt.push(matchesPattern(node, walk));
      }
      if (node.op === "rcall" && MACROS.has(name)) return visitMacro(node, { bound, nesting });
    }
    for (const child of children(node)) visit(child, bound, nesting);
  };
  const visitMacro = (
    node: Extract<ASTNode, { op: "rcall" }>,
    { bound, nesting }: { bound: ReadonlySet<string>; nesting: number },
  ): void => {
    const [name, range, args] = node.args;
    if (nesting >= MAX_MACRO_NESTING) {
      throw new FilterProblem(
        `macros are nested more than ${MAX_MACRO_NESTING} deep`,
        node.start + 1,
      );
    }
    visit(range, bound, nesting);
    const variables = name === "map" ? args.slice(0, 1) : args.slice(0, -1);
    const inner = new Set(bound);
    for (const variable of variables) if (variable.op === "id") inner.add(variable.args);
    for (const arg of args.slice(variables.length)) visit(arg, inner, nesting + 1);
  };
  visit(root, new Set(), 0);
  return walk;
}

/**
 * The text of a field path read from the root (`issue.labels`, `headers["x-github-event"]`):
 * an identifier no macro binds, then fields and literal indexes. Undefined for anything else.
 */
function rootPath(node: ASTNode, bound: ReadonlySet<string>): string | undefined {
  let at: ASTNode = node;
  while (at.op === "." || at.op === ".?" || at.op === "[]" || at.op === "[?]") {
    if ((at.op === "[]" || at.op === "[?]") && at.args[1].op !== "value") return undefined;
    at = at.args[0];
  }
  if (at.op !== "id" || bound.has(at.args) || at.args === RE2_METHOD) return undefined;
  return node.input.slice(node.start, node.end);
}

/** The nodes below `node`. */
function children(node: ASTNode): ASTNode[] {
  const found: ASTNode[] = [];
  const take = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(take);
    else if (value !== null && typeof value === "object" && "op" in value) {
      found.push(value as ASTNode);
    }
  };
  if (node.op !== "value" && node.op !== "id") take(node.args);
  return found;
}

/**
 * Checks a `matches()` call: one string literal, an RE2 pattern (the syntax CEL specifies).
 * @returns where its method name starts in the text
 * @throws FilterProblem for any other argument, or a pattern RE2 refuses
 */
function matchesPattern(node: Extract<ASTNode, { op: "rcall" }>, walk: Walk): number {
  const [, , args] = node.args;
  const pattern = args[0];
  if (args.length !== 1 || pattern.op !== "value" || typeof pattern.args !== "string") {
    throw new FilterProblem(
      "matches() takes one pattern written in quotes: a pattern read from the event could " +
        "make the gateway work without bound",
      (pattern ?? node).start + 1,
    );
  }
  try {
    walk.patterns.set(pattern.args, RE2JS.compile(pattern.args));
  } catch (error) {
    throw new FilterProblem(
      `invalid regular expression (RE2 syntax): ${(error as Error).message}`,
      pattern.start + 1,
    );
  }
  const at = node.input.lastIndexOf("matches", pattern.start);
  return at;
}

/** The problem of a name kept for the gateway's own use. */
function reserved(node: ASTNode): FilterProblem {
  return new FilterProblem(`"${RE2_METHOD}" is reserved`, node.start + 1);
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

/** Thrown by `matches()` past the evaluation's {@link MAX_REGEX_WORK}. */
class RegexBudgetError extends Error {}

/**
 * The environment whose `matches()` runs the compiled patterns on RE2, within `budget`.
 * @param patterns the expression's patterns, compiled
 * @param budget the work left to the current evaluation, reset before each
 */
function re2Environment(patterns: Map<string, RE2JS>, budget: { left: number }): Environment {
  return BASE.clone().registerFunction(
    `string.${RE2_METHOD}(string): bool`,
    (text: string, pattern: string) => {
      const regex = patterns.get(pattern) ?? RE2JS.compile(pattern);
      const work = regex.re2Input.prog.numInst() * text.length;
      budget.left -= work;
      if (budget.left < 0) {
        throw new RegexBudgetError(
          `matches(${JSON.stringify(pattern)}) over ${text.length} characters is more work than ` +
            `a filter may do (its ${regex.re2Input.prog.numInst()} RE2 instructions times the ` +
            `characters read, over all its calls, may reach ${MAX_REGEX_WORK})`,
        );
      }
      return regex.test(text);
    },
  );
}
