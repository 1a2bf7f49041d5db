/**
 * The gateway's HTTP app: `createApp(deps)` returns a Hono app whose `fetch` `gateway run`
 * passes to `Deno.serve`. Routes: `GET /health` and `/webhooks/<name>` (docs/http.md).
 *
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { Hono } from "hono";
import { lineTemplate } from "../lib/log.ts";
import {
  answerError,
  createIngestRefusalLog,
  createWebhookHandler,
  type IngestDeps,
  Refusal,
} from "./ingest/mod.ts";

export type { IngestDeps } from "./ingest/mod.ts";

const log = getLogger(["agent", "http"]);
const NOT_FOUND = lineTemplate("not found {method} {path}");
const INVALID_HOST = lineTemplate("invalid Host header of {host_chars} characters on {method}");

/**
 * Builds the gateway app.
 *
 * `/webhooks/<name>` is the hot path: its requests go straight to the ingest pipeline, found
 * from the URL string without Hono's router or context. Every other path, and any webhook URL
 * that is not a plain one-segment name, goes through Hono. Whichever way a request comes, a
 * refusal or an unexpected error is answered by `answerError`.
 * @param given the ingest pipeline's collaborators; without `refusals`, a refusal log with the
 *   default limits
 * @returns a Hono app: `GET /health` → 200 `{"status":"ok","platform":"webhook"}` (no auth);
 *   `/webhooks/<name>` → the ingest pipeline; anything else → 404 `{"error": ...}`.
 *   Unexpected errors answer 500 `{"error":"internal error"}` and are logged.
 * @example
 * ```ts
 * const app = createApp(deps);
 * Deno.serve({ port: 8644 }, app.fetch);
 * // in a test:
 * const response = await app.request("/webhooks/github", { method: "POST", headers, body });
 * ```
 */
export function createApp(given: IngestDeps): Hono {
  const refusals = given.refusals ?? createIngestRefusalLog();
  const deps = given.refusals === undefined ? { ...given, refusals } : given;
  const app = new Hono();
  const handleWebhook = createWebhookHandler(deps);
  const onError = (error: unknown, request: Request) => answerError(error, { request, refusals });

  app.get("/health", (c) => c.json({ status: "ok", platform: "webhook" }));
  app.all("/webhooks/:name", (c) => handleWebhook(c.req.raw, c.req.param("name")));
  const routed = app.fetch;
  // `app.request()` calls `app.fetch`, so tests through Hono take this path too. HEAD stays
  // with Hono, which answers it as the route's GET without a body.
  app.fetch = (request, ...rest) => {
    // Deno builds the URL from the Host header and the path: `Host: x/webhooks/other#` would
    // make `POST /webhooks/gh` reach `other`, and `Host: x/health?` any path answer as /health.
    const host = request.headers.get("host");
    if (host !== null && !HOST_HEADER.test(host)) {
      return onError(invalidHost(request, host), request);
    }
    const name = request.method === "HEAD" ? undefined : webhookName(request.url);
    if (name === undefined) return routed(request, ...rest);
    return handleWebhook(request, name).catch((error) => onError(error, request));
  };
  app.notFound((c) => onError(notFound(c.req.method, c.req.path), c.req.raw));
  app.onError((error, c) => onError(error, c.req.raw));
  return app;
}

/**
 * A Host header as RFC 9110 §7.2 defines it: `uri-host [ ":" port ]`, where the host is an IP
 * literal in brackets or a reg-name (RFC 3986 §3.2.2: unreserved, percent-encoded and sub-delims
 * characters). No `/`, `?`, `#`, `@` or `\`, which would move where the URL's path starts.
 */
const HOST_HEADER = /^(?:\[[0-9A-Za-z:.%~_-]*\]|[A-Za-z0-9._~!$&'()*+,;=%-]*)(?::[0-9]*)?$/;

/**
 * The 400 for a Host header that is not a host; it counts with the refusals naming no route.
 * Neither the answer nor the log line quotes the value: a broken client or proxy that merges
 * two header lines sends `Host: 127.0.0.1 Authorization: Bearer <secret>`, so only its length
 * is told.
 */
function invalidHost(request: Request, host: string): Refusal {
  const message = `invalid Host header (${host.length} characters): expected host[:port]`;
  return new Refusal(400, message, {
    pool: "others",
    line: {
      logger: log,
      level: "warning",
      template: INVALID_HOST,
      properties: { host_chars: host.length, method: request.method, status: 400 },
    },
  });
}

/** The 404 for a path the app does not serve; it counts with the refusals naming no route. */
function notFound(method: string, fullPath: string): Refusal {
  const path = fullPath.length > 200 ? `${fullPath.slice(0, 200)}…` : fullPath;
  return new Refusal(404, `not found: ${method} ${path}`, {
    pool: "others",
    line: {
      logger: log,
      level: "warning",
      template: NOT_FOUND,
      properties: { method, path, status: 404 },
    },
  });
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
