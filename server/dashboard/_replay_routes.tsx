/**
 * An event's Replay buttons (docs/dashboard.md#an-event): **Replay** does what
 * `agent webhook replay` does, through the same code (`lib/subscriptions/replay.ts`);
 * **Replay with changes** opens a form for the prompt template and the model of one more run,
 * queued as a replay of the event. Both are form POSTs behind the session and CSRF checks, and
 * send the browser back to the event's page, which says what was done.
 *
 * @module
 */
import type { Context, Hono } from "hono";
import { ConflictError, NotFoundError } from "../../lib/errors.ts";
import type { StoredEvent } from "../../lib/state/mod.ts";
import {
  describeTarget,
  readReplayRouting,
  type ReplayChanges,
  replayEvent,
  replayRoute,
} from "../../lib/subscriptions/replay.ts";
import type { DashboardEnv } from "./_auth.ts";
import { eventPage, findEvent, notFound } from "./_event_page.tsx";
import { MessagePage, sendPage } from "./_layout.tsx";
import { prefilledForm, readReplayForm, type ReplayForm } from "./_replay_form.ts";
import { ReplayPage } from "./_replay_page.tsx";
import type { AppParts } from "./mod.ts";

/** How the event's page learns what a replay did: `?replayed=<how>`. */
type ReplayedHow = "routed" | "kept" | "changed" | "changed-kept";

/**
 * Adds the Replay and Replay with changes routes to the dashboard app.
 * @param app the app, its session check and CSRF check already in front of these paths
 * @param parts the store, the configuration, the clock and `onReplay`
 */
export function replayRoutes(app: Hono<DashboardEnv>, parts: AppParts): void {
  app.post("/events/:id/replay", async (c) => {
    const event = await findEvent(parts, c.req.param("id"));
    if (!event) return notFound(c);
    const replayed = await replay(parts, event);
    if ("error" in replayed) {
      const notice = { ok: false, text: replayed.error };
      return sendPage(c, await eventPage(c, parts, { event, notice }), 409);
    }
    return backToEvent(c, event, replayed.keptBecause === undefined ? "routed" : "kept");
  });
  app.get("/events/:id/replay-with-changes", async (c) => {
    const event = await findEvent(parts, c.req.param("id"));
    if (!event) return notFound(c);
    if (event.mode !== "agent") return directRefusal(c, event);
    const picked = replayRoute(event.subscription, await readReplayRouting(parts.config));
    const form = prefilledForm(event, "route" in picked ? picked.route : undefined);
    return sendPage(c, await formPage(c, parts, { event, form }));
  });
  app.post("/events/:id/replay-with-changes", async (c) => {
    const event = await findEvent(parts, c.req.param("id"));
    if (!event) return notFound(c);
    if (event.mode !== "agent") return directRefusal(c, event);
    const read = readReplayForm(await c.req.parseBody());
    if ("error" in read) {
      const options = { event, form: read.form, error: read.error };
      return sendPage(c, await formPage(c, parts, options), 400);
    }
    const replayed = await replay(parts, event, read.changes);
    if ("error" in replayed) {
      const options = { event, form: read.form, error: replayed.error };
      return sendPage(c, await formPage(c, parts, options), 409);
    }
    return backToEvent(c, event, replayed.keptBecause === undefined ? "changed" : "changed-kept");
  });
}

/**
 * Queues the event again, routed by its subscription as the file holds it now, and wakes the
 * worker.
 * @returns why it kept its target, when it did; or the store's refusal (running, superseded),
 *   said once as "Not replayed: ..." (the store's own message may begin so already)
 */
async function replay(
  parts: AppParts,
  event: StoredEvent,
  changes?: ReplayChanges,
): Promise<{ keptBecause?: string } | { error: string }> {
  const routing = await readReplayRouting(parts.config);
  try {
    const replayed = await replayEvent(parts.store, event.id, {
      nowMs: parts.now(),
      routing,
      changes,
    });
    parts.onReplay();
    return replayed;
  } catch (error) {
    if (!(error instanceof ConflictError || error instanceof NotFoundError)) throw error;
    const { message } = error;
    return { error: message.startsWith("Not replayed") ? message : `Not replayed: ${message}` };
  }
}

/** The Replay with changes page, its form filled, with why its target is kept when it is. */
async function formPage(
  c: Context<DashboardEnv>,
  parts: AppParts,
  options: { event: StoredEvent; form: ReplayForm; error?: string },
) {
  const { event } = options;
  const picked = replayRoute(event.subscription, await readReplayRouting(parts.config));
  const attempts = await parts.store.attempts(event.id);
  const lastModel = attempts.findLast((attempt) => attempt.run)?.run?.model;
  return (
    <ReplayPage
      {...options}
      lastModel={lastModel ?? undefined}
      keptBecause={"keptBecause" in picked ? picked.keptBecause : undefined}
      csrf={c.get("session")!.csrf}
    />
  );
}

/** The answer to Replay with changes for a direct message: it has no answer to compare. */
function directRefusal(c: Context<DashboardEnv>, event: StoredEvent) {
  const page = (
    <MessagePage
      title="Not for a direct message"
      message={`Event ${event.id} is a direct message: no agent answers it, so there is no ` +
        "prompt or model to change. Its page's Replay button sends it again."}
    />
  );
  return sendPage(c, page, 409);
}

/** Sends the browser back to the event's page, which says what the replay did. */
function backToEvent(c: Context<DashboardEnv>, event: StoredEvent, how: ReplayedHow) {
  return c.redirect(`/events/${encodeURIComponent(event.id)}?replayed=${how}`, 303);
}

/**
 * What the event's page says after a Replay button sent the browser back to it.
 * @param replayed the `replayed` query parameter
 * @param event the event as it is now
 * @returns the notice; undefined for any other value
 */
export function replayNotice(
  replayed: string | undefined,
  event: StoredEvent,
): { ok: boolean; text: string } | undefined {
  const target = describeTarget(event);
  const kept = "its subscription cannot route it now";
  const texts: Record<ReplayedHow, string> = {
    routed: `Queued again, as ${event.subscription} renders and routes it now (to ${target}).`,
    kept: `Queued again, with the prompt and target it had (to ${target}): ${kept}.`,
    changed: `Queued again with your changes (to ${target}).`,
    "changed-kept": `Queued again with your changes, to the target it had (${target}): ${kept}.`,
  };
  if (replayed === undefined || !Object.hasOwn(texts, replayed)) return undefined;
  const then = replayed.startsWith("changed")
    ? " When it has answered, the new answer shows beside the previous one."
    : "";
  return {
    ok: true,
    text: `${texts[replayed as ReplayedHow]} The gateway runs it within a second.${then}`,
  };
}
