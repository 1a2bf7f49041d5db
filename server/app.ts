/**
 * The gateway's HTTP app: `createApp(deps)` returns a Hono app whose `fetch` `gateway run`
 * passes to `Deno.serve`. Routes: `GET /health` and `/webhooks/<name>` (CONTRACT §4).
 *
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { Hono } from "hono";
import { createWebhookHandler, type IngestDeps, withRefusalLog } from "./ingest/mod.ts";
import type { RefusalLog } from "./ingest/_refusal_log.ts";
import { internalErrorAnswer } from "./ingest/_respond.ts";

export type { IngestDeps } from "./ingest/mod.ts";

const log = getLogger(["agent", "http"]);

/**
 * Builds the gateway app.
 *
 * `/webhooks/<name>` is the hot path: its requests go straight to the ingest pipeline, found
 * from the URL string without Hono's router or context (a few percent of each request under
 * load). Every other path, and any webhook URL that is not a plain one-segment name, goes
 * through Hono as before.
 * @param given the ingest pipeline's collaborators
 * @returns a Hono app: `GET /health` → 200 `{"status":"ok","platform":"webhook"}` (no auth);
 *   `/webhooks/<name>` → the ingest pipeline; anything else → 404 `{"error": ...}`.
 *   Unexpected errors answer 500 `{"error":"internal error"}` and are logged.
 */
export function createApp(given: IngestDeps): Hono {
  const deps = withRefusalLog(given);
  const refusals = deps.refusals!;
  const app = new Hono();
  const handleWebhook = createWebhookHandler(deps);

  app.get("/health", (c) => c.json({ status: "ok", platform: "webhook" }));
  app.all("/webhooks/:name", (c) => handleWebhook(c.req.raw, c.req.param("name")));
  const routed = app.fetch;
  // `app.request()` calls `app.fetch`, so tests through Hono take this path too. HEAD stays
  // with Hono, which answers it as the route's GET without a body.
  app.fetch = (request, ...rest) => {
    // Deno builds the URL from the Host header and the path: `Host: x/webhooks/other#` would
    // make `POST /webhooks/gh` reach `other`, and `Host: x/health?` any path answer as /health.
    const host = request.headers.get("host");
    if (host !== null && !HOST_HEADER.test(host)) return invalidHost(refusals, request, host);
    const name = request.method === "HEAD" ? undefined : webhookName(request.url);
    if (name === undefined) return routed(request, ...rest);
    return handleWebhook(request, name).catch((error) => internalError(error, request));
  };
  app.notFound((c) => {
    const path = c.req.path.length > 200 ? `${c.req.path.slice(0, 200)}…` : c.req.path;
    refusals.refused(undefined, 404, () => {
      log.warn("not found {method} {path}", { method: c.req.method, path, status: 404 });
    });
    return c.json({ error: `not found: ${c.req.method} ${path}` }, 404);
  });
  app.onError((error, c) => internalError(error, c.req.raw));
  return app;
}

/**
 * A Host header as RFC 9110 §7.2 defines it: `uri-host [ ":" port ]`, where the host is an IP
 * literal in brackets or a reg-name (RFC 3986 §3.2.2: unreserved, percent-encoded and sub-delims
 * characters). No `/`, `?`, `#`, `@` or `\`, which would move where the URL's path starts.
 */
const HOST_HEADER = /^(?:\[[0-9A-Za-z:.%~_-]*\]|[A-Za-z0-9._~!$&'()*+,;=%-]*)(?::[0-9]*)?$/;

/** The 400 for a Host header that is not a host, and its log line. */
function invalidHost(refusals: RefusalLog, request: Request, host: string): Response {
  const shown = host.length > 100 ? `${host.slice(0, 100)}…` : host;
  refusals.refused(undefined, 400, () => {
    log.warn("invalid Host header {host} on {method}", {
      host: JSON.stringify(shown),
      method: request.method,
      status: 400,
    });
  });
  return Response.json({ error: `invalid Host header: ${shown}` }, { status: 400 });
}

/** Logs an unexpected error and answers 500 `{"error":"internal error"}`. */
function internalError(error: unknown, request: Request): Response {
  log.error("internal error on {method} {path}: {reason}", {
    method: request.method,
    path: new URL(request.url).pathname,
    reason: error instanceof Error ? error.stack ?? error.message : String(error),
  });
  return internalErrorAnswer();
}

const WEBHOOKS_PREFIX = "/webhooks/";

/**
 * The `<name>` of an absolute URL whose path is exactly `/webhooks/<name>`, as Hono's
 * `/webhooks/:name` would match it; `undefined` for anything else, and for names Hono would
 * percent-decode, so those still take Hono's route.
 * @param url an absolute URL, e.g. `http://127.0.0.1:8644/webhooks/github?x=1`
 * @returns the name, e.g. `github`, or `undefined`
 */
export function webhookName(url: string): string | undefined {
  const pathStart = url.indexOf("/", url.indexOf("://") + 3);
  if (pathStart < 0 || !url.startsWith(WEBHOOKS_PREFIX, pathStart)) return undefined;
  const nameStart = pathStart + WEBHOOKS_PREFIX.length;
  let nameEnd = nameStart;
  while (nameEnd < url.length) {
    const char = url.charCodeAt(nameEnd);
    if (char === 0x3f || char === 0x23) break; // "?" or "#"
    if (char === 0x2f || char === 0x25) return undefined; // "/" or "%"
    nameEnd += 1;
  }
  return nameEnd === nameStart ? undefined : url.slice(nameStart, nameEnd);
}
