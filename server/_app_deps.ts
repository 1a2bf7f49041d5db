/**
 * What the running gateway gives its HTTP app (`IngestDeps`): the routes, from config.yaml's
 * static routes and the subscription file (re-read when it changes), the limits of the
 * configuration, the state database, the worker's wake-up and the targets of direct delivery.
 *
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { literalMessage } from "../lib/log.ts";
import type { Config } from "../lib/config/mod.ts";
import type { MetricsRecorder } from "../lib/metrics/mod.ts";
import { createMemoryRateLimiter } from "../lib/subscriptions/rate_limit.ts";
import { findRoute } from "../lib/subscriptions/routes.ts";
import type { StateStore } from "../lib/state/mod.ts";
import { secretWarnings, unusableSubscriptions } from "../lib/subscriptions/file_store.ts";
import { openSubscriptionSource } from "../lib/subscriptions/source.ts";
import type { IngestDeps, RefusalLog } from "./ingest/mod.ts";
import { transformSlots } from "../lib/transforms/slots.ts";
import type { WorkerSetup } from "./_worker_setup.ts";
import { createSignatureVerifier } from "../lib/signatures/mod.ts";

const subscriptionLog = getLogger(["agent", "subscriptions"]);

/**
 * Finds routes by name: static routes first, then the subscriptions' records, from the file or
 * the database (`state.backend`), watched for changes. They are read now, so a corrupt file is
 * reported at start.
 * @param config the merged configuration: where the subscriptions are, and the static routes
 * @returns `IngestDeps.findRoute`, a record that cannot be served not found (404), with `stop()`,
 *   which stops watching
 * @throws StoreUnavailableError when the subscriptions' database cannot be reached
 */
export async function routeFinder(
  config: Config,
): Promise<IngestDeps["findRoute"] & { stop(): Promise<void> }> {
  const { webhook } = config;
  const source = await openSubscriptionSource(config);
  const where = source.where;
  // Records edited by hand that cannot be served: their requests are refused (404), said in the
  // log each time the file is read, so a bad record never costs an agent run it cannot deliver.
  let unusable = new Map<string, string>();
  // Said once in the log (and on the console) when the file becomes unreadable and when it is
  // readable again, so serving the last good copy (or none, at start) is never silent.
  const subscriptions = await source.watch({
    onErrorChange: (error, records) => {
      if (!error) return subscriptionLog.info("subscription file readable again");
      const count = Object.keys(records).length;
      const copy = `${count} subscription${count === 1 ? "" : "s"}`;
      subscriptionLog.error(
        literalMessage(`${error.message}; serving the last good copy (${copy})`),
      );
    },
    onReload: (records) => {
      unusable = unusableSubscriptions(records, where, webhook.routes);
      for (const reason of unusable.values()) {
        subscriptionLog.error(
          literalMessage(`${reason}; its requests are refused until it is fixed`),
        );
      }
      for (const reason of secretWarnings(records, where, webhook.routes)) {
        subscriptionLog.warn(literalMessage(reason));
      }
    },
  });
  const find: IngestDeps["findRoute"] = (name, options) => {
    const records = subscriptions.current(options); // may read the file anew: first
    return unusable.has(name) ? undefined : findRoute(name, records, webhook.routes);
  };
  return Object.assign(find, { stop: () => source.close() });
}

/**
 * The collaborators of the gateway's ingest pipeline.
 * @param config the merged configuration: the webhook platform's limits and global secret
 * @param parts the routes (see {@link routeFinder}), the refusal log, the state database, the
 *   clock (ms since the epoch), the worker with what it shares, the metrics' recorder, and the
 *   body limits of `GatewayOptions`
 * @returns the ingest dependencies
 */
export function ingestDeps(config: Config, parts: {
  findRoute: IngestDeps["findRoute"];
  refusals: RefusalLog;
  store: StateStore;
  now: () => number;
  setup: WorkerSetup;
  metrics?: MetricsRecorder;
  bodyTimeoutMs?: number;
  bodyBudgetBytes?: number;
  /** Aborts when the gateway begins to stop: transforms at ingest are killed. */
  stopping?: AbortSignal;
}): IngestDeps {
  const { webhook } = config;
  const { worker } = parts.setup;
  return {
    refusals: parts.refusals,
    findRoute: parts.findRoute,
    listenHost: webhook.host,
    maxBodyBytes: webhook.maxBodyBytes,
    bodyTimeoutMs: parts.bodyTimeoutMs,
    bodyBudgetBytes: parts.bodyBudgetBytes,
    rateLimitPerMinute: webhook.rateLimitPerMinute,
    globalSecret: webhook.secret,
    verifier: createSignatureVerifier(),
    // Gateways sharing a database each allow their share of a limit (docs/scaling.md#rate-limits).
    rateLimiter: createMemoryRateLimiter({ gateways: () => parts.store.liveGateways?.() ?? 1 }),
    store: parts.store,
    transforms: { signal: parts.stopping, slots: transformSlots() },
    onAccepted: () => worker.notify(),
    deliverNow: (event, payload) => worker.deliverNow(event, payload),
    now: parts.now,
    newId: () => crypto.randomUUID(),
    metrics: parts.metrics,
  };
}
