/**
 * The routes the gateway serves: static routes from `config.yaml` first, then the dynamic
 * subscriptions, which can never shadow a static route (docs/subscriptions.md).
 *
 * @module
 */
import type { Config } from "../config/mod.ts";
import { unbracketed } from "../config/address.ts";
import { UsageError } from "../errors.ts";
import {
  type CoalesceSnapshot,
  type EventDispatch,
  type RouteAgentOptions,
  storableText,
} from "../state/mod.ts";
import { DEFAULT_COALESCE_MAX_SECONDS, NAME_PATTERN, type Route } from "./mod.ts";
import { type SubscriptionRecords, unusableSubscriptions, wrongFieldType } from "./file_store.ts";
import { readSubscriptionsOf, subscriptionsWhere } from "./source.ts";
import { defaultPrompt, renderTemplate, type TemplateContext } from "./templates.ts";
import { keepExactNumber } from "./payload.ts";
import { chatWithThread } from "../targets/mod.ts";
import { sessionFor } from "./session.ts";
import { transformSnapshot } from "../transforms/mod.ts";

/**
 * Renders what `route` does with a payload: at ingest, and again when an event is replayed.
 * @param route the static route or subscription
 * @param payload the parsed JSON payload
 * @param context the event label, route name and delivery id the specials render
 * @param json the payload's JSON text, to render numbers a double rounds as they were written;
 *   without it they render rounded
 * @returns the mode, prompt (the rendered `--prompt`, or the default prompt when the route has
 *   none; docs/templates.md) and route snapshot stored with the event; for a route with a
 *   transform, an empty prompt and the transform in the snapshot: the prompt is rendered from
 *   what it prints (docs/subscriptions.md#transforms)
 * @example
 * ```ts
 * const dispatch = dispatchFor(route, payload, {
 *   event: "issues.opened",
 *   subscription: route.name,
 *   deliveryId: "72d3162e-cc78-11e3-81ab-4c9367dc0958",
 * }, body);
 * // { mode: "agent", prompt: "New issue #1: ...", route: { deliver: "telegram", chatId, skills } }
 * ```
 */
export function dispatchFor(
  route: Route,
  payload: unknown,
  context: TemplateContext,
  json?: string,
): EventDispatch {
  let { prompt, chatId } = render(route, payload, context);
  // An integer JavaScript cannot hold exactly (an id over 2^53) prints rounded,
  // 12345678901234567891 as 12345678901234567000: then the prompt is rendered again from the
  // payload's text, with its numbers as written. Only a prompt that shows a long run of digits
  // or an exponent pays for it.
  if (json !== undefined && ROUNDED_LOOKING.test(chatId === undefined ? prompt : prompt + chatId)) {
    ({ prompt, chatId } = render(route, JSON.parse(json, keepExactNumber), context));
  }
  const transform = transformSnapshot(route);
  const session = sessionFor(route, { payload, context, json });
  return {
    mode: route.deliver_only ? "direct" : "agent",
    ...(session.sessionKey === undefined ? {} : { sessionKey: session.sessionKey }),
    // As stored: a direct message sent now and its replay later are the same text. A
    // transform's event is rendered from what the transform prints, once it ran.
    prompt: transform ? "" : storableText(prompt),
    route: {
      deliver: route.deliver ?? "log",
      chatId,
      skills: route.skills ?? [],
      // Only when set: a route without one is stored as before, and its mode decides.
      ...(route.format === undefined ? {} : { format: route.format }),
      ...agentOptions(route),
      ...coalescing(route, { payload, context, json }),
      ...(transform ? { transform } : {}),
      ...session.route,
    },
  };
}

/**
 * The route's coalescing window for one event (docs/subscriptions.md#coalescing): its key is
 * `coalesce_key`, else the `session` template, rendered as the prompt is. A key that lacks a
 * field of the payload, or renders empty, leaves the event to run alone, as the session key
 * does (`sessionKeyOf`).
 */
function coalescing(
  route: Route,
  event: { payload: unknown; context: TemplateContext; json?: string },
): { coalesce?: CoalesceSnapshot } {
  const template = route.coalesce_key ?? route.session;
  if (!route.coalesce || !template || route.deliver_only) return {};
  const { payload, context, json } = event;
  let key = renderTemplate(template, payload, context);
  if (json !== undefined && ROUNDED_LOOKING.test(key.text)) {
    key = renderTemplate(template, JSON.parse(json, keepExactNumber), context);
  }
  // A placeholder left in would give every such event the same key, folding them together.
  if (key.missing.length > 0 || key.text.trim() === "") return {};
  return {
    coalesce: {
      key: key.text,
      windowSeconds: route.coalesce,
      maxSeconds: route.coalesce_max ?? DEFAULT_COALESCE_MAX_SECONDS,
    },
  };
}

/** The route's agent options as the snapshot keeps them; nothing when it sets none. */
function agentOptions(route: Route): { agent?: RouteAgentOptions } {
  const agent: RouteAgentOptions = {
    ...(route.model ? { model: route.model.trim() } : {}),
    ...(route.max_tokens === undefined ? {} : { maxTokens: route.max_tokens }),
    ...(route.temperature === undefined ? {} : { temperature: route.temperature }),
    ...(route.system_prompt ? { systemPrompt: route.system_prompt } : {}),
  };
  return Object.keys(agent).length ? { agent } : {};
}

/**
 * The rendered prompt and chat id of a route for one payload. A thread is rendered as the chat
 * id is and joined to it as `<chat>:<thread>`, the form the chat targets parse; a thread that
 * renders empty (its field is missing) leaves the message in the chat itself.
 */
function render(route: Route, payload: unknown, context: TemplateContext) {
  const prompt = route.prompt
    ? renderTemplate(route.prompt, payload, context).text
    : defaultPrompt(payload, context);
  const { chat_id: chat, thread } = route.deliver_extra ?? {};
  const chatId = chat ? renderTemplate(chat, payload, context).text : undefined;
  if (!thread) return { prompt, chatId };
  return {
    prompt,
    chatId: chatWithThread(chatId, renderTemplate(thread, payload, context).text),
  };
}

/** How a rounded number prints: 16 digits or more, or an exponent (`1.2345678901234568e+21`). */
const ROUNDED_LOOKING = /\d{16}|\de[+-]\d/;

/**
 * The route called `name`: the static one if `config.yaml` defines it, else the subscription.
 * @param name the `<name>` of `POST /webhooks/<name>`
 * @param records the dynamic subscriptions
 * @param staticRoutes the routes of `config.yaml`
 * @returns the route, or undefined when neither has that name
 */
export function findRoute(
  name: string,
  records: SubscriptionRecords,
  staticRoutes: ReadonlyMap<string, Route>,
): Route | undefined {
  const fixed = staticRoutes.get(name);
  if (fixed) return fixed;
  return Object.hasOwn(records, name) ? { ...records[name], name, origin: "dynamic" } : undefined;
}

/**
 * Every route: static routes, then dynamic subscriptions sorted by name (a dynamic record with
 * the name of a static route is skipped, as the gateway skips it); and what the gateway will not
 * serve of them: the subscriptions it skips because a static route has their name (sorted), and
 * those it refuses because they were edited into a state it cannot serve
 * (`unusableSubscriptions`).
 * @param config the loaded configuration: its static routes and its subscription file's path
 * @returns `routes` without the subscriptions that have a field of the wrong type, which cannot
 *   be described; `unusable`: the problem of each such subscription, by name; `hidden`: the
 *   names of the subscriptions skipped for a static route's name
 * @throws ConfigError when the subscription file is corrupt
 */
export async function routesAndHidden(
  config: Pick<Config, "paths" | "webhook">,
): Promise<{ routes: Route[]; hidden: string[]; unusable: Map<string, string> }> {
  const [records, where] = await Promise.all([
    readSubscriptionsOf(config),
    subscriptionsWhere(config),
  ]);
  const names = Object.keys(records).sort();
  // A record with a field of the wrong type cannot be described: it is only in `unusable`.
  const dynamic = names
    .filter((name) => !config.webhook.routes.has(name) && !wrongFieldType(records[name]))
    .map((name): Route => ({ ...records[name], name, origin: "dynamic" }));
  return {
    routes: [...config.webhook.routes.values(), ...dynamic],
    hidden: names.filter((name) => config.webhook.routes.has(name)),
    unusable: unusableSubscriptions(records, where, config.webhook.routes),
  };
}

/**
 * Why the gateway, listening on `listenHost`, answers a route's requests as it does an unknown
 * name's (404, the same body): the route is disabled (`agent webhook disable`), or it has
 * `auth: none` and the gateway listens on an address other hosts may reach
 * (docs/subscriptions.md#auth-none).
 * @param route the route found for a request's name
 * @param listenHost the address the gateway listens on (`extra.host`); undefined when unknown,
 *   which serves no `auth: none` route
 * @returns the reason, for the log line; undefined when the route is served
 * @example
 * ```ts
 * unservedReason({ name: "local", origin: "dynamic", auth: "none" }, "0.0.0.0");
 * // "auth none is served only on a loopback address, and the gateway listens on 0.0.0.0"
 * ```
 */
export function unservedReason(route: Route, listenHost: string | undefined): string | undefined {
  if (route.disabled) return "disabled (agent webhook enable turns it back on)";
  if (route.auth === "none" && !(listenHost !== undefined && isLoopbackHost(listenHost))) {
    return "auth none is served only on a loopback address, and the gateway listens on " +
      (listenHost ?? "an unknown address");
  }
  return undefined;
}

/**
 * Tells whether an address to listen on reaches this machine only: `localhost`, 127.0.0.0/8 or
 * `::1` (bracketed or not; an IPv4-mapped `::ffff:127.x.y.z` too). A wildcard (`0.0.0.0`, `::`)
 * or any other name is not: other hosts may reach it.
 * @param host a host name or address, as configured
 * @returns true for a loopback address
 * @example
 * ```ts
 * isLoopbackHost("127.0.0.1"); // true
 * isLoopbackHost("0.0.0.0"); // false
 * ```
 */
export function isLoopbackHost(host: string): boolean {
  const bare = unbracketed(host).toLowerCase();
  if (bare === "localhost" || bare === "::1" || bare === "0:0:0:0:0:0:0:1") return true;
  const v4 = bare.startsWith("::ffff:") ? bare.slice(7) : bare;
  return /^127(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}$/.test(v4);
}

/**
 * Refuses a subscription name that breaks the naming rule (docs/subscriptions.md), with the
 * rule.
 * @param name the `<name>` given
 * @param action what was asked, for the message: `subscribe`, `remove`, ...
 * @throws UsageError when `name` does not match {@link NAME_PATTERN}
 */
export function checkName(name: string, action: string): void {
  if (NAME_PATTERN.test(name)) return;
  throw new UsageError(
    `Cannot ${action} ${JSON.stringify(name)}: name must match ${NAME_PATTERN.source}`,
  );
}

/**
 * Refuses a CLI change to a route that `config.yaml` defines.
 * @param config the command's configuration: its static routes
 * @param name the `<name>` given
 * @param action what was asked, for the message: `subscribe`, `remove`, ...
 * @throws UsageError when `name` is a static route
 */
export function refuseStatic(
  config: Pick<Config, "paths" | "webhook">,
  name: string,
  action: string,
): void {
  if (!config.webhook.routes.has(name)) return;
  throw new UsageError(
    `Cannot ${action} "${name}": it is defined in config.yaml (${config.paths.config}); edit it there`,
  );
}
