/**
 * The rules a filter's CEL tree must keep for its evaluation to stay bounded
 * (docs/subscriptions.md#filters): `matches()` takes a pattern in quotes, valid RE2; a macro
 * (`exists`, `all`, `map`...) reads only its own variables, and macros nest at most two deep. And
 * what the tree reads: its root field paths, for explanations.
 *
 * @module
 */
import type { ASTNode } from "@marcbachmann/cel-js";
import type { RE2JS } from "@bufbuild/re2";
import { compilePattern, RE2_METHOD } from "./_re2.ts";

/** Macros nested in macros, at most: each level can multiply the work by a list's length. */
const MAX_MACRO_NESTING = 2;

/** The macros that bind variables: every argument but the last names one, `map`'s first only. */
const MACROS = new Set(["all", "exists", "exists_one", "map", "filter"]);

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

/** What {@link walkTree} finds in a tree. */
export interface Walk {
  /** The `matches()` patterns, compiled. */
  patterns: Map<string, RE2JS>;
  /** Where each `matches` method name starts, in the text. */
  matchesAt: number[];
  /** The root field paths read, in order, once each. */
  paths: string[];
}

/**
 * Checks the tree's rules and gathers its patterns and paths.
 * @param root the tree cel-js parsed
 * @returns the patterns, where `matches` is written, and the root paths
 * @throws FilterProblem where a rule is broken
 */
export function walkTree(root: ASTNode): Walk {
  const walk: Walk = { patterns: new Map(), matchesAt: [], paths: [] };
  visit(root, { bound: new Set(), nesting: 0 }, walk);
  return walk;
}

/** Where a node is: the variables the macros around it bind, and how many there are. */
interface Scope {
  bound: ReadonlySet<string>;
  nesting: number;
}

/** Checks one node and those below it, adding to `walk`. */
function visit(node: ASTNode, scope: Scope, walk: Walk): void {
  const path = rootPath(node, scope.bound);
  if (path !== undefined && scope.nesting > 0) {
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
    if (node.op === "rcall" && MACROS.has(name)) return visitMacro(node, scope, walk);
  }
  for (const child of children(node)) visit(child, scope, walk);
}

/**
 * Checks a macro: its range where it stands, its body with its variables bound, one level
 * deeper.
 */
function visitMacro(node: Extract<ASTNode, { op: "rcall" }>, scope: Scope, walk: Walk): void {
  const [name, range, args] = node.args;
  if (scope.nesting >= MAX_MACRO_NESTING) {
    throw new FilterProblem(
      `macros are nested more than ${MAX_MACRO_NESTING} deep`,
      node.start + 1,
    );
  }
  visit(range, scope, walk);
  const variables = name === "map" ? args.slice(0, 1) : args.slice(0, -1);
  const bound = new Set(scope.bound);
  for (const variable of variables) if (variable.op === "id") bound.add(variable.args);
  for (const arg of args.slice(variables.length)) {
    visit(arg, { bound, nesting: scope.nesting + 1 }, walk);
  }
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
    walk.patterns.set(pattern.args, compilePattern(pattern.args));
  } catch (error) {
    throw new FilterProblem(
      `invalid regular expression (RE2 syntax): ${(error as Error).message}`,
      pattern.start + 1,
    );
  }
  return node.input.lastIndexOf("matches", pattern.start);
}

/** The problem of a name kept for the gateway's own use. */
function reserved(node: ASTNode): FilterProblem {
  return new FilterProblem(`"${RE2_METHOD}" is reserved`, node.start + 1);
}
