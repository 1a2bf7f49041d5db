/**
 * The template playground's work (docs/dashboard.md#template-playground): a subscription's
 * prompt template rendered against one of its stored payloads, as the gateway renders it at
 * ingest, with the placeholders whose path is missing and an estimate of the tokens. It only
 * reads: the subscription is never written.
 *
 * @module
 */
import type { Config } from "../../lib/config/mod.ts";
import { NotFoundError } from "../../lib/errors.ts";
import type { StateStore, StoredEvent } from "../../lib/state/mod.ts";
import { readSubscriptionsOrErrorOf } from "../../lib/subscriptions/source.ts";
import { defaultPrompt, renderTemplate } from "../../lib/subscriptions/templates.ts";

/** Longest template the playground renders, in characters: it travels in a URL's query. */
export const MAX_TEMPLATE_CHARS = 8_000;
/** How many of a subscription's newest stored events the playground offers. */
export const EVENT_CHOICES = 50;
/** Characters per token of the estimate (see {@link estimateTokens}). */
export const CHARS_PER_TOKEN = 4;

/** What the playground renders: which subscription, which of its events, which template. */
export interface PlaygroundInput {
  subscription: string;
  /** The event's id; @default {the subscription's newest stored event} */
  eventId?: string;
  /** The template; an empty one renders the default prompt, as the gateway does. */
  template: string;
}

/** A rendered template. */
export interface PlaygroundResult {
  /** The prompt as the gateway would render it; missing placeholders left as written. */
  text: string;
  /** Paths of the placeholders not found in the payload, in order, without repeats. */
  missing: string[];
  /** The estimated tokens of `text` (see {@link estimateTokens}). */
  tokens: number;
  /** Whether `text` is the default prompt, the template being empty. */
  usedDefault: boolean;
  /** The event rendered against. */
  eventId: string;
}

/**
 * Estimates the tokens of a prompt: one per {@link CHARS_PER_TOKEN} characters, rounded up.
 * A heuristic, not a tokenizer: each provider's model counts differently, and English text
 * runs at about 4 characters per token with OpenAI's and Anthropic's tokenizers alike.
 * @param text the prompt
 * @returns the estimate, 0 for an empty text
 */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / CHARS_PER_TOKEN);
}

/**
 * The prompt templates of every subscription and static route by name, sorted by name; a route
 * without one maps to the empty string (the default prompt). Dynamic subscriptions of the same
 * name as a static route are the ones the gateway serves second, so the static one wins here too.
 * @param config the static routes and the subscription file's path
 * @returns name to template; the dynamic ones missing when the file cannot be read
 */
export async function subscriptionPrompts(
  config: Pick<Config, "paths" | "webhook">,
): Promise<Map<string, string>> {
  const records = await readSubscriptionsOrErrorOf(config);
  const prompts = new Map<string, string>();
  if (!(records instanceof Error)) {
    for (const [name, record] of Object.entries(records)) prompts.set(name, record.prompt ?? "");
  }
  for (const [name, route] of config.webhook.routes) prompts.set(name, route.prompt ?? "");
  return new Map([...prompts].sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0));
}

/**
 * Renders a template against a stored event of the subscription.
 * @param store the state store, read only
 * @param input the subscription, the event (its newest by default) and the template
 * @returns the result, or `{ error, status }` when the template is too long (400), or the
 *   subscription has no such event (404)
 */
export async function renderPlayground(
  store: Pick<StateStore, "listEvents" | "getEvent">,
  input: PlaygroundInput,
): Promise<PlaygroundResult | { error: string; status: 400 | 404 }> {
  if (input.template.length > MAX_TEMPLATE_CHARS) {
    return { error: `The template is longer than ${MAX_TEMPLATE_CHARS} characters`, status: 400 };
  }
  const event = await findEvent(store, input.subscription, input.eventId);
  if (!event) {
    const what = input.eventId ? `no event "${input.eventId}"` : "no stored event";
    return { error: `Subscription "${input.subscription}" has ${what}`, status: 404 };
  }
  let payload: unknown;
  try {
    payload = JSON.parse(event.payload);
  } catch {
    payload = event.payload; // stored before payloads were checked: rendered as a string
  }
  const context = {
    event: event.eventLabel,
    subscription: event.subscription,
    deliveryId: event.deliveryId,
  };
  const usedDefault = input.template === "";
  const { text, missing } = usedDefault
    ? { text: defaultPrompt(payload, context), missing: [] }
    : renderTemplate(input.template, payload, context);
  return { text, missing, tokens: estimateTokens(text), usedDefault, eventId: event.id };
}

/** The event of this subscription with this id, or its newest; null when there is none. */
async function findEvent(
  store: Pick<StateStore, "listEvents" | "getEvent">,
  subscription: string,
  eventId: string | undefined,
): Promise<StoredEvent | null> {
  if (!eventId) return (await store.listEvents({ subscription, limit: 1 }))[0] ?? null;
  try {
    const event = await store.getEvent(eventId);
    return event?.id === eventId && event.subscription === subscription ? event : null;
  } catch (error) {
    if (error instanceof NotFoundError) return null; // a prefix of several: not a choice offered
    throw error;
  }
}
