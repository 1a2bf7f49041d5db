/**
 * Delivery targets (docs/targets.md): where an agent's answer or a direct-delivery message goes.
 *
 * `deliver()` resolves the destination first (a missing token or chat fails before anything is
 * sent), splits the text to the platform's limit (rendering Markdown in each chat's formatting,
 * `_format.ts`), then sends the parts in order and reports each one so a crash can resume where
 * it stopped. `validateTarget()` is the subscribe-time
 * check (docs/subscriptions.md). Each target is one module (`telegram.ts`, `slack.ts`, ...)
 * and one line in the registry below.
 *
 * @module
 */

import { TargetError, UsageError } from "../errors.ts";
import type {
  DeliveryJob,
  MessageFormat,
  Resolved,
  SendContext,
  SentMessage,
  Target,
  TargetContext,
} from "./_target.ts";
import { messageParts } from "./_format.ts";
import { discord } from "./discord.ts";
import { githubComment } from "./github_comment.ts";
import { gitlabComment } from "./gitlab_comment.ts";
import { log } from "./log.ts";
import { origin } from "./origin.ts";
import { slack } from "./slack.ts";
import { splitMessage } from "./split.ts";
import { telegram } from "./telegram.ts";

export type {
  DeliveryJob,
  EventSource,
  MessageFormat,
  SentMessage,
  TargetContext,
} from "./_target.ts";
export { splitMessage };
export { chatWithThread } from "./_env.ts";

/** The values of a subscription's `format` (`--format`): `plain`, `markdown`. */
export const MESSAGE_FORMATS: readonly MessageFormat[] = ["plain", "markdown"];

/**
 * How an event's message is meant: the subscription's `format` when it sets one, else Markdown
 * for an agent's answer (the default system prompt asks for it) and plain text for a direct
 * message (a template is sent as written). docs/targets.md#formatting
 * @param mode the event's mode
 * @param format the subscription's `format`, if set
 * @returns the format to deliver with
 */
export function messageFormat(mode: "agent" | "direct", format?: MessageFormat): MessageFormat {
  return format ?? (mode === "agent" ? "markdown" : "plain");
}

/** Every target, in the order messages list them. Adding a target is one line here. */
const REGISTRY: readonly Target[] = [
  log,
  telegram,
  discord,
  slack,
  githubComment,
  gitlabComment,
  origin,
];

/** Default bound on waiting out HTTP 429 answers inside one `deliver()` call, in ms. */
const DEFAULT_MAX_RATE_LIMIT_WAIT_MS = 30_000;

/** What `deliver()` did: the target that sent (for `origin`, the one it picked), parts, where. */
export interface DeliveryReceipt {
  /** The target that sent: `origin` reports the target it resolved to (`github_comment`, ...). */
  target: string;
  /** Number of parts the message was split into (including any sent before a resume). */
  parts: number;
  /** Where it went, without secrets: `123:7`, `octo/repo#12`, `gateway log`. */
  destination: string;
}

/** One part delivered, as `deliver()` reports it: who sent it, where, and what the platform said. */
export interface SentPart extends SentMessage {
  /** The target that sent it: for `origin`, the target it resolved to. */
  target: string;
  /** Where it went, without secrets, as {@link DeliveryReceipt.destination}. */
  destination: string;
}

/**
 * Called by `deliver()` after each part went out, and awaited before the next one.
 * @param partsSent parts sent so far, counting those sent before a resume
 * @param parts parts in the whole message
 * @param sent the part just sent: target, destination, and the platform's message id and link
 */
export type OnPartSent = (
  partsSent: number,
  parts: number,
  sent: SentPart,
) => void | Promise<void>;

/** The names of all targets: `log`, `telegram`, `discord`, `slack`, `github_comment`, ... */
export const TARGET_NAMES: readonly string[] = REGISTRY.map((target) => target.name);

/** Each target's needs, destination and per-message limit (UTF-16 code units), for README/CLI. */
export const TARGETS: readonly {
  name: string;
  needs: string;
  destination: string;
  maxChars?: number;
}[] = REGISTRY.map(({ name, needs, destination, maxChars }) => ({
  name,
  needs,
  destination,
  maxChars,
}));

/**
 * The variable naming the chat a target's messages go to when the subscription gives none.
 * @param name a target name (`telegram`)
 * @returns `TELEGRAM_HOME_CHANNEL`, or undefined for a target without one or an unknown name
 */
export function homeChannelOf(name: string): string | undefined {
  return lookup(name)?.homeChannel;
}

function lookup(name: string): Target | undefined {
  return REGISTRY.find((target) => target.name === name);
}

/** Resolves a job to the target that sends it and where, following one `origin` redirect. */
function resolveTarget(
  job: DeliveryJob,
  ctx: TargetContext,
): { target: Target; resolved: Resolved<unknown> } {
  const target = lookup(job.target);
  if (target === undefined) {
    throw new TargetError(
      `Unknown delivery target "${job.target}"; valid targets: ${TARGET_NAMES.join(", ")}`,
      { permanent: true },
    );
  }
  const resolution = target.resolve(job, ctx);
  if (!("redirect" in resolution)) return { target, resolved: resolution };
  const { target: name, chatId } = resolution.redirect;
  const next = lookup(name);
  if (next === undefined || next === target) {
    throw new TargetError(
      `deliver=${target.name} redirected to unknown target "${name}" (check extra.home); valid targets: ${
        TARGET_NAMES.filter((known) => known !== target.name).join(", ")
      }`,
      { permanent: true },
    );
  }
  const resolved = next.resolve({ ...job, target: name, chatId }, ctx);
  if ("redirect" in resolved) {
    throw new TargetError(`deliver=${target.name} cannot redirect twice`, { permanent: true });
  }
  return { target: next, resolved };
}

/**
 * Delivers one message: resolves the destination, splits the text to the target's limit (and,
 * for `job.format` `markdown`, renders each part in the target's formatting), sends the parts in
 * order (skipping `job.partsAlreadySent`), and calls `onPartSent` after each.
 *
 * @param job What to send, where, and for which event.
 * @param ctx Env (tokens, home channels, API URLs), `fetch`, `sleep`, the gateway log.
 * @param onPartSent Called after each part with the number of parts sent so far, the number of
 *   parts in all and the part's {@link SentPart} (the platform's message id), awaited, so the
 *   caller can persist progress before the next part goes out.
 * @returns The receipt: target that sent, number of parts, destination label.
 * @throws {TargetError} permanent for an unknown target, missing token or destination, an empty
 *   message or a platform 4xx; retryable (with `retryAfterSeconds` when known) for 429 beyond
 *   `ctx.maxRateLimitWaitMs` (default 30,000 ms in total), 5xx and network errors.
 * @example
 * ```ts
 * const job: DeliveryJob = {
 *   target: "telegram", chatId: "123", text: "Build failed", payload: {}, source: "github",
 *   subscription: "ci", eventLabel: "workflow_run", eventId: "ev1", deliveryId: "d1",
 *   partsAlreadySent: 0, // or the parts a crashed attempt had sent
 * };
 * const ctx: TargetContext = {
 *   env: Deno.env.toObject(),
 *   fetch,
 *   sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
 *   log: (message, properties) => console.log(message, properties),
 * };
 * const receipt = await deliver(job, ctx, (partsSent, parts, sent) => {
 *   // persist partsSent (and sent.messageId) before the next part goes out
 * });
 * receipt.destination; // "123"
 * ```
 */
export async function deliver(
  job: DeliveryJob,
  ctx: TargetContext,
  onPartSent?: OnPartSent,
): Promise<DeliveryReceipt> {
  const { target, resolved } = resolveTarget(job, ctx);
  if (target.name !== "log" && job.text.trim() === "") {
    throw new TargetError(`Cannot deliver an empty message to ${target.name}`, { permanent: true });
  }
  const parts = messageParts(job.text, {
    format: job.format ?? "plain",
    maxChars: target.maxChars,
    dialect: target.dialect,
  });
  const sendCtx: SendContext = {
    ...ctx,
    rateLimitBudget: { remainingMs: ctx.maxRateLimitWaitMs ?? DEFAULT_MAX_RATE_LIMIT_WAIT_MS },
  };
  for (let index = job.partsAlreadySent ?? 0; index < parts.length; index++) {
    const sent = await target.send(resolved.destination, parts[index], sendCtx);
    const part = { ...sent, target: target.name, destination: resolved.label };
    await onPartSent?.(index + 1, parts.length, part);
  }
  return { target: target.name, parts: parts.length, destination: resolved.label };
}

/**
 * Checks a subscription's target when it is created (`agent webhook subscribe`,
 * docs/subscriptions.md).
 *
 * @param options `target` (`--deliver`, empty means the default `log`), `chatId`
 *   (`--deliver-chat-id`, may hold placeholders), `thread` (`--deliver-thread`, may hold
 *   placeholders), `deliverOnly`, and the env the CLI sees.
 * @returns Warnings that do not block, such as `TELEGRAM_BOT_TOKEN is not set; ...`.
 * @throws {UsageError} For an unknown target (with the valid ones), `deliverOnly` with `log`
 *   or no target, a chat target with neither a chat id nor its home channel variable, or a
 *   literal chat id or thread of the wrong shape, or a thread for a target without chats.
 */
export function validateTarget(
  options: {
    target: string;
    chatId?: string;
    thread?: string;
    deliverOnly: boolean;
    env: Record<string, string | undefined>;
  },
): string[] {
  const name = options.target.trim() || "log";
  if (options.deliverOnly && name === "log") {
    const real = TARGET_NAMES.filter((known) => known !== "log").join(", ");
    throw new UsageError(
      `--deliver-only needs a real target (--deliver ${real}); log only writes the gateway log`,
    );
  }
  const target = lookup(name);
  if (target === undefined) {
    throw new UsageError(
      `Unknown delivery target "${name}". Valid targets: ${TARGET_NAMES.join(", ")}`,
    );
  }
  if (options.thread !== undefined && target.homeChannel === undefined) {
    const chats = REGISTRY.filter((known) => known.homeChannel).map((known) => known.name);
    throw new UsageError(
      `--deliver-thread is for a chat target (${chats.join(", ")}); ${name} has no threads`,
    );
  }
  const { chatId, thread, env } = options;
  return target.check?.({ chatId, thread, env }) ?? [];
}
