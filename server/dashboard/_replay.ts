/**
 * The Replay button: what `agent webhook replay` does (docs/commands.md), from the dashboard.
 * The event is queued again as a new attempt series, rendered and routed by its subscription as
 * it is now; an event whose subscription was removed, was edited into one the gateway cannot
 * serve, or while the subscription file cannot be read, keeps the prompt and target it had.
 *
 * @module
 */
import type { Config } from "../../lib/config/mod.ts";
import { ConfigError } from "../../lib/errors.ts";
import type { StateStore, StoredEvent } from "../../lib/state/mod.ts";
import {
  readSubscriptionsOrError,
  unusableSubscriptions,
} from "../../lib/subscriptions/file_store.ts";
import { dispatchFor, findRoute } from "../../lib/subscriptions/routes.ts";

/** What a replay did. */
export interface Replayed {
  /** The event as queued again. */
  event: StoredEvent;
  /** Why it keeps the prompt and target it had; undefined when its subscription routed it now. */
  keptBecause?: string;
}

/**
 * Queues an event again, routed by its subscription as it is now.
 * @param eventId the event's id
 * @param deps the store; the home's subscription file and static routes (`config`); `nowMs`
 * @returns the event queued again, and why it kept its old routing when it did
 * @throws NotFoundError when no event has this id
 * @throws ConflictError when the event is running, or replaying a failed direct message would
 *   send it twice
 * @throws StoreUnavailableError when the store refuses the write
 */
export async function replayEvent(
  eventId: string,
  deps: {
    store: Pick<StateStore, "replay">;
    config: Pick<Config, "paths" | "webhook">;
    nowMs: number;
  },
): Promise<Replayed> {
  const { paths, webhook } = deps.config;
  const read = await readSubscriptionsOrError(paths.subscriptions);
  const records = read instanceof ConfigError ? undefined : read;
  const unusable = records
    ? unusableSubscriptions(records, paths.subscriptions, webhook.routes)
    : new Map<string, string>();
  let keptBecause: string | undefined;
  const event = deps.store.replay(eventId, deps.nowMs, (found) => {
    const route = findRoute(found.subscription, records ?? {}, webhook.routes);
    keptBecause = route
      ? unusable.get(route.name)
      : records
      ? `subscription ${found.subscription} no longer exists`
      : "the subscription file could not be read";
    if (!route || keptBecause !== undefined) return undefined;
    return dispatchFor(route, JSON.parse(found.payload), {
      event: found.eventLabel,
      subscription: route.name,
      deliveryId: found.deliveryId,
    }, found.payload);
  });
  return { event, keptBecause };
}

/**
 * Where a replayed event goes, as the page says it: `telegram chat 42`, `log`, with `, directly`
 * for direct delivery.
 */
export function describeTarget(event: StoredEvent): string {
  const chat = event.route.chatId ? ` chat ${event.route.chatId}` : "";
  return `${event.route.deliver}${chat}${event.mode === "direct" ? ", directly" : ""}`;
}
