/**
 * Replaying a stored event: what `agent webhook replay` and the dashboard's Replay buttons do
 * (docs/commands.md, docs/dashboard.md#an-event). The event is queued again as a new attempt
 * series, rendered and routed by its subscription as it is now; an event whose subscription was
 * removed, was edited into one the gateway cannot serve, or while the subscription file cannot be
 * read, keeps the prompt and target it had. A replay with changes runs once with another prompt
 * or model, and leaves the subscription as it is.
 *
 * @module
 */
import type { Config } from "../config/mod.ts";
import { ConfigError } from "../errors.ts";
import type { EventDispatch, StoredEvent } from "../state/mod.ts";
import type { Route } from "./mod.ts";
import { type SubscriptionRecords, unusableSubscriptions } from "./file_store.ts";
import { readSubscriptionsOrErrorOf, subscriptionsWhere } from "./source.ts";
import { dispatchFor, findRoute } from "./routes.ts";
import type { TemplateContext } from "./templates.ts";

/** The subscriptions a replay is routed by, as the gateway would serve them now. */
export interface ReplayRouting {
  /** The subscription file's records; undefined when it cannot be read. */
  subscriptions: SubscriptionRecords | undefined;
  /** Why the file cannot be read, when it cannot: a corrupt file must not block replays. */
  readError?: ConfigError;
  /** The records edited into a state the gateway cannot serve, with why, by name. */
  unusable: Map<string, string>;
  /** The routes of `config.yaml`, which come first. */
  staticRoutes: ReadonlyMap<string, Route>;
}

/**
 * Reads the subscriptions a replay is routed by. A corrupt file is not thrown: it is given back
 * as `readError`, and the events replayed meanwhile keep what they had, as the running gateway
 * keeps its last good copy.
 * @param config the home's subscription file (`paths`) and static routes (`webhook`)
 * @returns the routing; read once per replay, so a fix to the file applies at once
 */
export async function readReplayRouting(
  config: Pick<Config, "paths" | "webhook">,
): Promise<ReplayRouting> {
  const { webhook } = config;
  const read = await readSubscriptionsOrErrorOf(config);
  const subscriptions = read instanceof ConfigError ? undefined : read;
  const unusable = subscriptions
    ? unusableSubscriptions(subscriptions, await subscriptionsWhere(config), webhook.routes)
    : new Map<string, string>();
  return {
    subscriptions,
    ...(read instanceof ConfigError ? { readError: read } : {}),
    unusable,
    staticRoutes: webhook.routes,
  };
}

/**
 * The route that renders and routes a replay of an event of subscription `name` now, or why
 * there is none and the event keeps what it had.
 * @param name the event's subscription
 * @param routing as {@link readReplayRouting} read it
 * @returns `{ route }`, or `{ keptBecause }`: `subscription gh no longer exists`, the file's
 *   error, or the problem of a record the gateway cannot serve
 */
export function replayRoute(
  name: string,
  routing: ReplayRouting,
): { route: Route } | { keptBecause: string } {
  if (!routing.subscriptions && !routing.staticRoutes.has(name)) {
    return { keptBecause: "the subscription file could not be read" };
  }
  const route = findRoute(name, routing.subscriptions ?? {}, routing.staticRoutes);
  if (!route) return { keptBecause: `subscription ${name} no longer exists` };
  const problem = routing.unusable.get(route.name);
  return problem === undefined ? { route } : { keptBecause: problem };
}

/**
 * What one replay changes, for its run only; the subscription is not changed.
 * `prompt.template` is rendered as a subscription's `prompt` is (docs/templates.md; empty renders
 * the default prompt): against the payload, or against what the subscription's transform prints
 * when it has one (docs/subscriptions.md#transforms); `prompt.text` is the prompt as written, and
 * the transform does not run.
 * `model` is asked for instead of the subscription's `model` or `agent.model`.
 */
export interface ReplayChanges {
  prompt?: { template: string } | { text: string };
  model?: string;
}

/** What a replay needs of a state store: its `replay` (every backend answers with a promise). */
export interface ReplayingStore {
  replay(
    eventId: string,
    nowMs: number,
    redispatch?: (event: StoredEvent) => EventDispatch | undefined,
  ): StoredEvent | Promise<StoredEvent>;
}

/** What a replay did. */
export interface Replayed {
  /** The event as queued again. */
  event: StoredEvent;
  /** Why its target (and, without changes, its prompt) are those it had; undefined when routed. */
  keptBecause?: string;
}

/**
 * Queues an event again, routed by its subscription as it is now, with `changes` applied.
 * @param store the state store (its `replay`, as `StateStore.replay` documents it)
 * @param eventId the event's id, or a unique prefix of it
 * @param options `nowMs`: the time, in ms since the epoch; `routing`: from
 *   {@link readReplayRouting}; `changes`: another prompt or model for this run
 * @returns the event queued again, and why it kept its old routing when it did
 * @throws NotFoundError when no event matches, or the prefix matches several
 * @throws ConflictError when the event is running, or replaying a failed direct message would
 *   send it twice
 * @throws StoreUnavailableError when the store refuses the write
 * @example
 * ```ts
 * const routing = await readReplayRouting(config);
 * const { event } = await replayEvent(store, "evt_0mh2k3x9a1b2c3d4", {
 *   nowMs: Date.now(),
 *   routing,
 *   changes: { prompt: { template: "Summarise {issue.title}" }, model: "gpt-4o" },
 * });
 * ```
 */
export async function replayEvent(
  store: ReplayingStore,
  eventId: string,
  options: { nowMs: number; routing: ReplayRouting; changes?: ReplayChanges },
): Promise<Replayed> {
  const { routing, changes } = options;
  let keptBecause: string | undefined;
  const event = await store.replay(eventId, options.nowMs, (found) => {
    const picked = replayRoute(found.subscription, routing);
    const context: TemplateContext = {
      event: found.eventLabel,
      subscription: found.subscription,
      deliveryId: found.deliveryId,
    };
    if ("keptBecause" in picked) {
      keptBecause = picked.keptBecause;
      return changes && changedKept(found, context, changes);
    }
    const route = changes?.model ? { ...picked.route, model: changes.model } : picked.route;
    const prompt = changes?.prompt;
    const dispatch = dispatchFor(
      prompt && "template" in prompt ? { ...route, prompt: prompt.template } : route,
      JSON.parse(found.payload),
      { ...context, subscription: route.name },
      found.payload,
    );
    return prompt && "text" in prompt ? asWritten(dispatch, prompt.text) : dispatch;
  });
  return { event, ...(keptBecause === undefined ? {} : { keptBecause }) };
}

/**
 * An event that keeps its mode and target, with the changes: its prompt rendered from the new
 * template (as `dispatchFor` renders one, so numbers print as written; against what the event's
 * transform prints when it has one) and the model asked for.
 */
function changedKept(
  found: StoredEvent,
  context: TemplateContext,
  changes: ReplayChanges,
): EventDispatch {
  const { prompt: change, model } = changes;
  const route = model ? { ...found.route, agent: { ...found.route.agent, model } } : found.route;
  const kept = { mode: found.mode, prompt: found.prompt, route };
  if (change && "text" in change) return asWritten(kept, change.text);
  if (change && route.transform) {
    // The worker renders the prompt from what the transform prints, as the subscription's is.
    const { prompt: _old, ...transform } = route.transform;
    const template = change.template ? { prompt: change.template } : {};
    return { ...kept, prompt: "", route: { ...route, transform: { ...transform, ...template } } };
  }
  if (change) {
    const routed: Route = { name: found.subscription, origin: "dynamic", prompt: change.template };
    const rendered = dispatchFor(routed, JSON.parse(found.payload), context, found.payload);
    return { ...kept, prompt: rendered.prompt };
  }
  return kept;
}

/**
 * A dispatch that sends `text` as the prompt, as written: without its transform, which would
 * otherwise run again and render the prompt over it.
 */
function asWritten(dispatch: EventDispatch, text: string): EventDispatch {
  const { transform: _dropped, ...route } = dispatch.route;
  return { ...dispatch, prompt: text, route };
}

/**
 * Where a replayed event goes, as the CLI and the dashboard say it.
 * @param event the event queued again
 * @returns `telegram chat 42`, `log`, with `, directly` for direct delivery
 */
export function describeTarget(event: StoredEvent): string {
  const chat = event.route.chatId ? ` chat ${event.route.chatId}` : "";
  return `${event.route.deliver}${chat}${event.mode === "direct" ? ", directly" : ""}`;
}
