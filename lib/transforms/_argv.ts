/**
 * Splitting a `transform` into the program and its arguments as a POSIX shell splits words
 * (quotes, backslashes), with `shell-quote`'s `parse`, and refusing what only a shell would
 * do: operators (`|`, `;`, `&&`, `>`), globs, variables and substitutions, comments. The
 * program then runs without a shell (docs/subscriptions.md#transforms).
 *
 * @module
 */
// @ts-types="@types/shell-quote"
import { parse, type ParseEntry } from "shell-quote";

/** What a transform's text may not hold, with why, for {@link TransformSyntaxError}. */
export class TransformSyntaxError extends Error {
  /**
   * @param message what is wrong, e.g. `the operator "|" needs a shell, and transforms run
   *   without one`
   */
  constructor(message: string) {
    super(message);
    this.name = "TransformSyntaxError";
  }
}

/** Marks a `$NAME` for `parse`, which would otherwise read the variable from an env. */
interface Variable {
  op: "$";
  key: string;
}

/**
 * The words of a transform: the program, then its arguments.
 * @param command the `transform` text, e.g. `jq -c '{title: .issue.title}'`
 * @returns argv, at least one word, the first not empty
 * @throws TransformSyntaxError for an empty command, an operator, a glob, a `$` variable or
 *   substitution, a backtick, a comment, or an unquoted line break
 * @example
 * ```ts
 * transformArgv(`jq -c '{title: .issue.title}'`); // ["jq", "-c", "{title: .issue.title}"]
 * transformArgv("jq . | head"); // throws: the operator "|" needs a shell ...
 * ```
 */
export function transformArgv(command: string): string[] {
  // An unquoted line break ends a command in a shell: read as `;`, it is refused as one.
  const entries = parse(command.replaceAll("\n", " ; "), variable);
  for (const entry of entries) refuseShellOnly(entry);
  const words = parse(command, variable) as string[];
  if (words.length === 0 || words[0] === "") {
    throw new TransformSyntaxError("it names no program: give a program and its arguments");
  }
  return words;
}

/** Keeps `$NAME` as an entry of its own, so that it is refused rather than expanded. */
function variable(key: string): Variable {
  return { op: "$", key };
}

/** Refuses an entry only a shell could make sense of. */
function refuseShellOnly(entry: ParseEntry | Variable): void {
  if (typeof entry === "string") {
    if (entry.includes("`")) {
      throw new TransformSyntaxError(
        "a backtick is a command substitution, which needs a shell: transforms run without one",
      );
    }
    return;
  }
  if ("comment" in entry) {
    throw new TransformSyntaxError(
      `"#${entry.comment}" is a comment: quote the # to pass it to the program`,
    );
  }
  if (entry.op === "glob") {
    const { pattern } = entry as { pattern: string };
    throw new TransformSyntaxError(
      `"${pattern}" is a glob, which needs a shell: quote it to pass it as written`,
    );
  }
  if (entry.op === "$") {
    const { key } = entry as Variable;
    throw new TransformSyntaxError(
      key === ""
        ? "$( ) is a command substitution, which needs a shell: transforms run without one"
        : `$${key} is a variable, which needs a shell: quote it with ' ' to pass it as written`,
    );
  }
  const op = entry.op === ";" ? "; (or a line break)" : entry.op;
  throw new TransformSyntaxError(
    `the operator ${op} needs a shell, and transforms run without one: put the pipeline in a ` +
      "script and name the script, or quote the operator to pass it as an argument",
  );
}
