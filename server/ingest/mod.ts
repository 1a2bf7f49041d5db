/**
 * The ingest pipeline of `POST /webhooks/<name>` (docs/http.md), and the face of this folder.
 * The steps run in order, and the first that refuses throws a {@link Refusal}, which
 * {@link answerError} turns into the answer and the log line. Authentication runs on the raw
 * bytes before anything is parsed, and requests that fail it never touch the state database.
 * Authentication is in `_auth.ts`, the steps after parsing in `_dispatch.ts`.
 *
 * @module
 */
import type { RateLimiter } from "../../lib/subscriptions/rate_limit.ts";
import type { NewEvent, StateStore } from "../../lib/state/mod.ts";
import { NAME_PATTERN, type Route } from "../../lib/subscriptions/mod.ts";
import { unservedReason } from "../../lib/subscriptions/routes.ts";
import type { DirectResult } from "../../lib/worker/mod.ts";
import { BodyBudget, BodyDeadlines, declaredLength, readBody } from "./_body.ts";
import { parsePayload } from "./_payload.ts";
import { authenticate, formsSignedBy, refuseStaleLinear } from "./_auth.ts";
import { dispatch } from "./_dispatch.ts";
import type { IngestTransforms } from "./_transform.ts";
import { log } from "./_answers.ts";
import { Refusal, refusalFor, refusalOf } from "./_refusal.ts";
import { type MetricsRecorder, NO_METRICS } from "../../lib/metrics/mod.ts";
import { createRefusalLog, type RefusalLog, type RefusalLogLimits } from "./_refusal_log.ts";
import { detectScheme, type SchemeName, type SignatureVerifier } from "../../lib/signatures/mod.ts";

export { internalErrorAnswer } from "./_answers.ts";
export { answerError, type LogLine, Refusal, type RefusalPool } from "./_refusal.ts";
export type { RefusalLog, RefusalLogLimits } from "./_refusal_log.ts";

/** What the ingest pipeline needs; `gateway run` builds the real ones, tests pass fakes. */
export interface IngestDeps {
  /**
   * Finds a route by name: static routes first, then dynamic subscriptions. The subscriptions
   * may be a copy up to 100 ms old; `fresh` asks for the file as it is now, which the handler
   * does before it answers 404 for a name, and 403 or 401 for a request a newer secret could
   * pass.
   */
  findRoute(name: string, options?: { fresh?: boolean }): Route | undefined;
  /**
   * The address the gateway listens on (`extra.host`): a route with `auth: none` is served only
   * when it is a loopback address (docs/subscriptions.md#auth-none). @default {none: no such
   * route is served}
   */
  listenHost?: string;
  /** Largest accepted body, in bytes. */
  maxBodyBytes: number;
  /** Time allowed to receive a whole body, in milliseconds. @default {30000} */
  bodyTimeoutMs?: number;
  /**
   * Bytes of bodies received at once (see `BodyBudget`).
   * @default {four times `maxBodyBytes`, at least 32 MiB}
   */
  bodyBudgetBytes?: number;
  /** Default requests per minute per subscription. */
  rateLimitPerMinute: number;
  /** Global secret (`extra.secret`): used by static routes without a secret of their own. */
  globalSecret?: string;
  /** Checks a request's signature under a route's scheme and secrets. */
  verifier: SignatureVerifier;
  /** Takes one request from the subscription's allowance (`rate` step). */
  rateLimiter: RateLimiter;
  /** Where agent-mode events and direct-delivery records are made durable. */
  store: StateStore;
  /**
   * What transforms at ingest share (docs/subscriptions.md#transforms): the gateway's stop,
   * which kills them, and the places for those that run at once. @default {no stop, no bound}
   */
  transforms?: IngestTransforms;
  /** Called after an agent-mode event is persisted, to wake the worker. */
  onAccepted(): void;
  /**
   * Sends a direct-delivery message while its sender waits: the worker's
   * `EventWorker.deliverNow`, which records it (or holds the record while the store refuses
   * it) and knows which delivery ids are being sent, by a request or a replay.
   * @throws StoreUnavailableError when the store cannot be read (answered 503)
   */
  deliverNow(event: NewEvent, payload: unknown): Promise<DirectResult>;
  /** Clock, in milliseconds since the epoch. */
  now(): number;
  /** Generates delivery ids for requests that carry none. */
  newId(): string;
  /**
   * Told each answer and each event's fate (docs/metrics.md): `webhookRequest` here,
   * `event` in the dispatch steps. @default {`NO_METRICS`: nothing is recorded}
   */
  metrics?: Pick<MetricsRecorder, "webhookRequest" | "event">;
  /**
   * Which refusals are written to the log (see `RefusalLog`); the gateway's start makes it and
   * writes the count of those left out. `createApp` makes one with the default limits when
   * none is given; without one, every refusal is written.
   */
  refusals?: RefusalLog;
}

/**
 * A refusal log whose own lines (a pool no longer logged, the count left out) go to the ingest
 * pipeline's log, as its refusals do.
 * @param limits lines per pool and window (@default {100 per 10 s})
 * @returns the refusal log
 */
export function createIngestRefusalLog(limits?: RefusalLogLimits): RefusalLog {
  return createRefusalLog((line) => log.warn(line), { limits });
}

/** The pipeline's collaborators and what it keeps between requests. */
interface Pipeline {
  deps: IngestDeps;
  deadlines: BodyDeadlines;
  budget: BodyBudget;
}

const NO_BODY = new Uint8Array();

/** Handles one request to `/webhooks/<name>`; see {@link createWebhookHandler}. */
export type WebhookHandler = (request: Request, name: string) => Promise<Response>;

/**
 * Builds the handler of `/webhooks/<name>`. It keeps the set of direct deliveries under way.
 * @param deps the pipeline's collaborators
 * @returns a handler whose promise settles with dispatch's answer (docs/http.md), or rejects
 *   with the {@link Refusal} of the first step that refuses; any other rejection is unexpected.
 *   {@link answerError} answers both.
 * @example
 * ```ts
 * const handleWebhook = createWebhookHandler(deps);
 * const response = await handleWebhook(request, "github")
 *   .catch((error) => answerError(error, { request, refusals: deps.refusals }));
 * ```
 */
export function createWebhookHandler(deps: IngestDeps): WebhookHandler {
  const pipeline: Pipeline = {
    deps,
    deadlines: new BodyDeadlines(deps.bodyTimeoutMs),
    budget: new BodyBudget(deps.maxBodyBytes, deps.bodyBudgetBytes),
  };
  const metrics = deps.metrics ?? NO_METRICS;
  return async (request, name) => {
    try {
      const response = await handleWebhook(pipeline, { request, name });
      metrics.webhookRequest(name, response.status); // answered: the route was found
      return response;
    } catch (error) {
      const refusal = refusalOf(error, name);
      const status = refusal instanceof Refusal ? refusal.status : 500;
      metrics.webhookRequest(servedName(deps, name, status), status);
      throw refusal;
    }
  };
}

/**
 * The name a refused request counts under in the metrics: its own when the gateway serves it,
 * else none, so that names made up by whoever reaches the port do not grow the set of labels.
 * Only a 404, a 405 or an unexpected error (500) can come before the route is found: any other
 * refusal's name is served, and only those are looked up again.
 */
function servedName(deps: IngestDeps, name: string, status: number): string | null {
  if (status === 404) return null;
  if (status !== 405 && status !== 500) return name;
  try {
    return NAME_PATTERN.test(name) && deps.findRoute(name) !== undefined ? name : null;
  } catch {
    return null; // the error being answered may be this lookup's own
  }
}

/** The steps of docs/http.md, in order: the first that refuses throws. */
async function handleWebhook(
  pipeline: Pipeline,
  { request, name }: { request: Request; name: string },
): Promise<Response> {
  const { deps } = pipeline;
  // 1. method
  if (request.method !== "POST") {
    const error = `method ${request.method} not allowed: use POST`;
    throw refusalFor(name, { status: 405, error, headers: { allow: "POST" } });
  }
  // 2. route (a disabled one, or `auth: none` off loopback, is answered as an unknown name)
  const found = NAME_PATTERN.test(name) ? findServed(deps, name) : undefined;
  const unserved = found && unservedReason(found, deps.listenHost);
  if (!found || unserved) {
    const error = `unknown subscription: ${name}`;
    throw refusalFor(name, { status: 404, error, detail: unserved });
  }
  // 3. size
  const body = await receiveBody(request, pipeline, found);
  // 4. auth
  const nowMs = deps.now();
  const { route, scheme } = await authenticate(deps, { request, name, route: found, body, nowMs });
  // 5. rate
  const rate = deps.rateLimiter.take(name, route.rate_limit ?? deps.rateLimitPerMinute, nowMs);
  if (!rate.allowed) {
    const headers = { "retry-after": `${rate.retryAfterSeconds}` };
    throw refusalFor(name, { status: 429, error: "rate limit exceeded", headers });
  }
  // 6. parse (and Linear's timestamp, which is in the body)
  const payload = parseBody(request, { body, scheme });
  refuseStaleLinear({ name, scheme, payload: payload.value, nowMs });
  // 7. ping, filter, dedupe, dispatch, store down
  return dispatch(deps, { route, scheme, headers: request.headers, payload });
}

/**
 * The route called `name` from the copy of the subscription file, or from the file as it is now
 * when the copy has none or one it does not serve (it may have been enabled a moment ago).
 */
function findServed(deps: IngestDeps, name: string): Route | undefined {
  const cached = deps.findRoute(name);
  if (cached && !unservedReason(cached, deps.listenHost)) return cached;
  return deps.findRoute(name, { fresh: true });
}

/**
 * The "size" step: the body, read within `maxBodyBytes`, the time allowed and the budget of
 * bodies received at once.
 * @throws BodyError 413, 408, 400; 503 past the budget
 */
async function receiveBody(
  request: Request,
  { deps, deadlines, budget }: Pipeline,
  route: Route,
): Promise<Uint8Array> {
  // A request without any signature header is refused (401, or 403 without a secret) before
  // its body is read: it cannot make the gateway receive and hold a body. Only once its size
  // is known to be within the limit (Content-Length), as the size step comes first; a
  // chunked one is read, and counted, first. A signed request (nearly all) skips this check
  // of its Content-Length: readBody makes it. A route with `auth: none` takes unsigned ones.
  const unsigned = route.auth !== "none" && detectScheme(request.headers) === null &&
    declaredLength(request, deps.maxBodyBytes) !== null;
  return unsigned ? NO_BODY : await readBody(request, deps.maxBodyBytes, { deadlines, budget });
}

/**
 * The "parse" step: JSON, or the forms the scheme's senders send (see `formsSignedBy`).
 * @returns the payload and its JSON text
 * @throws BodyError 400 for a body that is not a payload
 */
function parseBody(
  request: Request,
  { body, scheme }: { body: Uint8Array; scheme: SchemeName },
): { value: unknown; json: string } {
  return parsePayload(body, request.headers.get("content-type"), {
    forms: formsSignedBy(scheme, request.headers),
  });
}
