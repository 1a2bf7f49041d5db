/**
 * Transforms (docs/subscriptions.md#transforms): a subscription's `transform` is a program and
 * its arguments, split as a shell splits words and run without a shell. It gets the payload's
 * JSON on stdin and prints the JSON the prompt (or direct message) is rendered from, or
 * `{"skip": true}` to drop the event. The gateway runs it at ingest, after the filters; when it
 * fails there, the event is accepted with its transform pending, and the worker runs it again
 * with the event's attempts.
 *
 * @example
 * ```ts
 * transformProblem("jq . | head"); // 'the operator | needs a shell, ...'
 * const result = await runTransform(
 *   { command: ["jq", "-c", "{title: .issue.title}"], timeoutSeconds: 5 },
 *   '{"issue":{"title":"Crash"}}',
 * );
 * // { skip: false, json: '{"title":"Crash"}', value: { title: "Crash" } }
 * ```
 *
 * @module
 */
import type { Route } from "../subscriptions/mod.ts";
import type { StoredEvent, TransformSnapshot } from "../state/mod.ts";
import { defaultPrompt, renderTemplate, type TemplateContext } from "../subscriptions/templates.ts";
import { keepExactNumber } from "../subscriptions/payload.ts";
import { transformArgv, TransformSyntaxError } from "./_argv.ts";
import { runProgram, said, TransformError } from "./_program.ts";

export { TransformError, TransformSyntaxError };
export { MAX_TRANSFORM_OUTPUT_BYTES } from "./_program.ts";

/** A transform's time limit when its subscription sets none, in seconds. */
export const DEFAULT_TRANSFORM_TIMEOUT_SECONDS = 5;

/** The longest time limit a subscription may set, in seconds. */
export const MAX_TRANSFORM_TIMEOUT_SECONDS = 300;

/** What the lineage keeps as an event's transformed JSON when its transform skipped it. */
export const SKIPPED_JSON = '{"skip":true}';

/** What a transform gave: an event to drop, or the JSON to render from. */
export type TransformResult =
  | { skip: true }
  | { skip: false; json: string; value: unknown };

/**
 * What is wrong with a `transform`, for a message that points at it.
 * @param command the subscription's `transform`
 * @returns undefined when it splits into a program and its arguments; else why not
 * @example
 * ```ts
 * transformProblem("jq . > out.json");
 * // "the operator > needs a shell, and transforms run without one: ..."
 * ```
 */
export function transformProblem(command: string): string | undefined {
  try {
    transformArgv(command);
    return undefined;
  } catch (error) {
    if (error instanceof TransformSyntaxError) return error.message;
    throw error;
  }
}

/**
 * What is wrong with a `transform_timeout`.
 * @param value its value, as parsed (absent is fine)
 * @returns the rule it breaks; undefined when it is a number of seconds over 0, at most
 *   {@link MAX_TRANSFORM_TIMEOUT_SECONDS}
 */
export function transformTimeoutProblem(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  return typeof value === "number" && value > 0 && value <= MAX_TRANSFORM_TIMEOUT_SECONDS
    ? undefined
    : `must be a number of seconds over 0, at most ${MAX_TRANSFORM_TIMEOUT_SECONDS}`;
}

/**
 * The transform a route's events keep in their route snapshot, so that the worker runs it as
 * the route was when the event came in; undefined for a route without one (or with one that
 * does not split, in a record edited by hand: the gateway then renders as without one).
 * @param route the static route or subscription
 */
export function transformSnapshot(route: Route): TransformSnapshot | undefined {
  if (!route.transform) return undefined;
  let command: string[];
  try {
    command = transformArgv(route.transform);
  } catch {
    return undefined;
  }
  return {
    command,
    timeoutSeconds: route.transform_timeout ?? DEFAULT_TRANSFORM_TIMEOUT_SECONDS,
    ...(route.prompt ? { prompt: route.prompt } : {}),
  };
}

/**
 * Whether an event still needs its transform run: its route has one, it has no transformed
 * JSON yet, and what it renders is still to be used (a direct message, or an agent-mode event
 * whose agent has not answered).
 * @param event the stored event
 */
export function transformPending(
  event: Pick<StoredEvent, "route" | "transformed" | "mode" | "response">,
): boolean {
  return event.route.transform !== undefined && event.transformed === undefined &&
    (event.mode === "direct" || event.response === null);
}

/**
 * What an event's transform did, as `agent webhook show --json` and the dashboard's lineage
 * give it (docs/subscriptions.md#transforms).
 * @param event the stored event
 * @returns the program's words, its time limit in seconds, and `state`: `printed` (JSON to
 *   render from), `skipped` (it printed `{"skip": true}`) or `pending` (not run successfully
 *   yet); null when the route has no transform
 * @example
 * ```ts
 * transformJson(event);
 * // { command: ["jq", "-c", "{title: .issue.title}"], timeout_seconds: 5, state: "printed" }
 * ```
 */
export function transformJson(
  event: Pick<StoredEvent, "route" | "transformed">,
): { command: string[]; timeout_seconds: number; state: "printed" | "skipped" | "pending" } | null {
  const transform = event.route.transform;
  if (transform === undefined) return null;
  const state = event.transformed === undefined
    ? "pending"
    : event.transformed === SKIPPED_JSON
    ? "skipped"
    : "printed";
  return { command: transform.command, timeout_seconds: transform.timeoutSeconds, state };
}

/**
 * Runs a transform on a payload.
 * @param transform the program and its arguments, and its time limit
 * @param payload the payload's JSON text, given on stdin
 * @param options `signal`: kills the program (the gateway stops); `env`: its environment,
 *   less the gateway's secrets (@default {the gateway's})
 * @returns `skip` when it printed an object whose `skip` is true; else its JSON, as printed
 *   (trimmed) and parsed
 * @throws TransformError when it cannot be started, exits with a failure, is killed at the
 *   limit, prints more than `MAX_TRANSFORM_OUTPUT_BYTES`, nothing, or what is not JSON; the
 *   message ends with the end of its stderr
 */
export async function runTransform(
  transform: Pick<TransformSnapshot, "command" | "timeoutSeconds">,
  payload: string,
  options: { signal?: AbortSignal; env?: Record<string, string> } = {},
): Promise<TransformResult> {
  const program = transform.command[0];
  const output = await runProgram(transform.command, payload, {
    timeoutSeconds: transform.timeoutSeconds,
    ...options,
  });
  const json = new TextDecoder().decode(output.stdout).trim();
  if (json === "") {
    throw new TransformError(`The transform "${program}" printed nothing${said(output.stderr)}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    const start = json.length > 80 ? `${json.slice(0, 80)}…` : json;
    throw new TransformError(
      `The transform "${program}" printed what is not JSON (${(error as Error).message}): ` +
        `${JSON.stringify(start)}${said(output.stderr)}`,
    );
  }
  const skip = typeof value === "object" && value !== null &&
    (value as { skip?: unknown }).skip === true;
  return skip ? { skip: true } : { skip: false, json, value };
}

/**
 * The prompt (or direct message) rendered from a transform's JSON: the route's prompt
 * template, or the default prompt when it has none (docs/templates.md). Numbers a double
 * rounds are rendered as printed.
 * @param template the route's `prompt`, if it has one
 * @param transformed the transform's JSON, parsed and as printed
 * @param context the event label, route name and delivery id the specials render
 */
export function promptFrom(
  template: string | undefined,
  transformed: { value: unknown; json: string },
  context: TemplateContext,
): string {
  const render = (value: unknown) =>
    template ? renderTemplate(template, value, context).text : defaultPrompt(value, context);
  const prompt = render(transformed.value);
  // As `dispatchFor` does: only a prompt that shows a rounded-looking number pays for it.
  return /\d{16}|\de[+-]\d/.test(prompt)
    ? render(JSON.parse(transformed.json, keepExactNumber))
    : prompt;
}
