/**
 * The gateway's HTTP app: `createApp(deps)` returns a Hono app whose `fetch` `gateway run`
 * passes to `Deno.serve`. Routes: `GET /health` and `/webhooks/<name>` (CONTRACT §4).
 *
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { Hono } from "hono";
import { createWebhookHandler, type IngestDeps } from "./ingest.ts";

export type { IngestDeps } from "./ingest.ts";

const log = getLogger(["agent", "http"]);

/**
 * Builds the gateway app.
 * @param deps the ingest pipeline's collaborators
 * @returns a Hono app: `GET /health` → 200 `{"status":"ok","platform":"webhook"}` (no auth);
 *   `/webhooks/<name>` → the ingest pipeline; anything else → 404 `{"error": ...}`.
 *   Unexpected errors answer 500 `{"error":"internal error"}` and are logged.
 */
export function createApp(deps: IngestDeps): Hono {
  const app = new Hono();
  const handleWebhook = createWebhookHandler(deps);

  app.get("/health", (c) => c.json({ status: "ok", platform: "webhook" }));
  app.all("/webhooks/:name", (c) => handleWebhook(c.req.raw, c.req.param("name")));
  app.notFound((c) => {
    const path = c.req.path.length > 200 ? `${c.req.path.slice(0, 200)}…` : c.req.path;
    log.warn("not found {method} {path}", { method: c.req.method, path, status: 404 });
    return c.json({ error: `not found: ${c.req.method} ${path}` }, 404);
  });
  app.onError((error, c) => {
    log.error("internal error on {method} {path}: {reason}", {
      method: c.req.method,
      path: c.req.path,
      reason: error.stack ?? error.message,
    });
    return c.json({ error: "internal error" }, 500);
  });
  return app;
}
