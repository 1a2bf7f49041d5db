/**
 * Refused requests (docs/http.md): a step that refuses throws a {@link Refusal}, and
 * {@link answerError} turns it into the JSON answer `{"error": …}` and its log line, as far as
 * the refusal log lets refusals into the log. Errors of the layers below (a body too large, a
 * state database that refuses an event) become refusals in {@link refusalOf}.
 *
 * @module
 */
import { getLogger, type Logger, type LogLevel } from "@logtape/logtape";
import { StoreUnavailableError } from "../../lib/errors.ts";
import { type LineTemplate, lineTemplate, writeLine } from "../../lib/log.ts";
import { NAME_PATTERN } from "../../lib/subscriptions/mod.ts";
import { answer, internalErrorAnswer, log, STORE_RETRY_AFTER_SECONDS } from "./_answers.ts";
import { BodyError } from "./_body.ts";
import type { RefusalLog } from "./_refusal_log.ts";

const httpLog = getLogger(["agent", "http"]);

/**
 * The refusal-log pool a refusal's line counts in (see `RefusalLog.refused`): a subscription's
 * own; `others`, for refusals that name no subscription (unknown names and paths, methods, Host
 * headers); or `unlimited`, for the gateway's own failures, whose lines are always written.
 */
export type RefusalPool = { subscription: string } | "others" | "unlimited";

/** A log line, as `writeLine` writes it. */
export interface LogLine {
  logger: Logger;
  level: LogLevel;
  template: LineTemplate;
  /** The record's properties; those the template names fill it in. */
  properties: Record<string, unknown>;
}

/**
 * A refused request: what its answer and its log line are. Thrown by the step that refuses and
 * answered by {@link answerError}, as Hono's `HTTPException` is by its error handler.
 *
 * @example
 * ```ts
 * throw new Refusal(503, "event store unavailable, retry later", {
 *   headers: { "retry-after": "5" },
 *   pool: "unlimited",
 *   line: { logger, level: "error", template, properties: { subscription, status: 503 } },
 * });
 * ```
 * Most steps build one with {@link refusalFor}.
 */
export class Refusal extends Error {
  /** The HTTP status: 4xx, or 503 when the sender should retry later. */
  readonly status: number;
  /** Headers of the answer besides `content-type` (`Allow`, `Retry-After`). */
  readonly headers: Headers;
  /** The refusal-log pool its line counts in. */
  readonly pool: RefusalPool;
  /** Its log line. */
  readonly line: LogLine;

  /**
   * @param status the HTTP status
   * @param message the answer's `{"error": message}`
   * @param options `headers` of the answer; the `pool` and the `line` of the log
   */
  constructor(
    status: number,
    message: string,
    options: { headers?: HeadersInit; pool: RefusalPool; line: LogLine },
  ) {
    super(message);
    this.name = "Refusal";
    this.status = status;
    this.headers = new Headers(options.headers);
    this.pool = options.pool;
    this.line = options.line;
  }
}

/** The line of most refusals, read once (see `writeLine`). */
export const REJECTED = lineTemplate("rejected {subscription}: {reason}");
const STORE_UNAVAILABLE = lineTemplate("store unavailable for {subscription}: {reason}");

/**
 * The refusal of a request to `/webhooks/<name>`, with the `rejected …` line. A 404 or 405
 * counts in the pool of refusals that name no subscription, others in the subscription's.
 * @param name the subscription name of the URL, whatever it holds: the line quotes one that is
 *   not a subscription name, and the answer and the line show at most 80 characters of it
 * @param refused the status, the message (the line's reason) and more headers of the answer;
 *   `detail`: said after the reason in the line only, not in the answer
 * @returns the refusal, to throw
 * @example
 * ```ts
 * throw refusalFor("github", { status: 429, error: "rate limit exceeded", headers: { "retry-after": "12" } });
 * ```
 */
export function refusalFor(
  name: string,
  { status, error, headers, detail }: {
    status: number;
    error: string;
    headers?: HeadersInit;
    detail?: string;
  },
): Refusal {
  const subscription = name.length > 80 ? `${name.slice(0, 80)}…` : name;
  // A name that is not a subscription name is quoted: `zz 2026-… INFO ingest accepted gh`
  // would read as another line's words to whoever greps the log.
  const shown = NAME_PATTERN.test(name) ? subscription : JSON.stringify(subscription);
  // Replacer functions: a string would expand `$&`, `$'` and `` $` `` in the name.
  const reason = error.replace(name, () => subscription);
  return new Refusal(status, reason, {
    headers,
    pool: status === 404 || status === 405 ? "others" : { subscription: name },
    line: {
      logger: log,
      level: "warning",
      template: REJECTED,
      properties: {
        subscription: shown,
        status,
        // The detail is for the operator only: a disabled name answers as an unknown one.
        reason: error.replace(name, () => shown) + (detail ? ` (${detail})` : ""),
      },
    },
  });
}

/**
 * The refusal an error of the layers below the steps stands for, for a request to `name`:
 * a `BodyError` is refused with its status (a 503 with `Retry-After`), a
 * `StoreUnavailableError` with 503 and `Retry-After` and an error line that is always written.
 * @param error what a step threw
 * @param name the subscription name of the URL
 * @returns the refusal; any other error as it is
 */
export function refusalOf(error: unknown, name: string): unknown {
  if (error instanceof BodyError) {
    const headers = error.status === 503
      ? { "retry-after": `${STORE_RETRY_AFTER_SECONDS}` }
      : undefined;
    return refusalFor(name, { status: error.status, error: error.message, headers });
  }
  if (error instanceof StoreUnavailableError) {
    return new Refusal(503, "event store unavailable, retry later", {
      headers: { "retry-after": `${STORE_RETRY_AFTER_SECONDS}` },
      pool: "unlimited",
      line: {
        logger: log,
        level: "error",
        template: STORE_UNAVAILABLE,
        properties: { subscription: name, status: 503, reason: error.message },
      },
    });
  }
  return error;
}

/**
 * The answer to a refusal, `{"error": message}` with its status and headers; writes its line,
 * unless `refusals` has had its share of lines of the refusal's pool.
 * @param refusal what was refused
 * @param refusals the gateway's refusal log; without one (a pipeline built by hand in a test),
 *   every line is written
 * @returns the JSON answer
 */
function answerRefusal(refusal: Refusal, refusals: RefusalLog | undefined): Response {
  const { line, pool, status } = refusal;
  const write = () => writeLine(line.logger, line.level, line.template, line.properties);
  if (pool === "unlimited" || refusals === undefined) write();
  else refusals.refused(pool === "others" ? undefined : pool.subscription, status, write);
  return answer(status, { error: refusal.message }, Object.fromEntries(refusal.headers));
}

/**
 * The one place where a request's error becomes its answer: a {@link Refusal} its own (see
 * {@link answerRefusal}); anything else, unexpected, 500 `{"error":"internal error"}` and an
 * error line with its stack.
 * @param error what handling the request threw
 * @param context the request, and the gateway's refusal log
 * @returns the JSON answer
 * @example
 * ```ts
 * app.onError((error, c) => answerError(error, { request: c.req.raw, refusals }));
 * ```
 */
export function answerError(
  error: unknown,
  { request, refusals }: { request: Request; refusals: RefusalLog | undefined },
): Response {
  if (error instanceof Refusal) return answerRefusal(error, refusals);
  httpLog.error("internal error on {method} {path}: {reason}", {
    method: request.method,
    path: new URL(request.url).pathname,
    reason: error instanceof Error ? error.stack ?? error.message : String(error),
  });
  return internalErrorAnswer();
}
