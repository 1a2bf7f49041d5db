/**
 * The dashboard's routes about events, behind the session check: the events page and its live
 * stream, an event's page (its lineage) and its Replay button, and the same as JSON
 * (`/api/events`, `/api/events/<id>`).
 *
 * @module
 */
import type { Context, Hono } from "hono";
import { ConflictError, NotFoundError } from "../../lib/errors.ts";
import type { Lineage, StoredEvent } from "../../lib/state/mod.ts";
import type { DashboardEnv } from "./_auth.ts";
import { EventPage } from "./_event_page.tsx";
import { EventsPage, PAGE_SIZE } from "./_events_page.tsx";
import { filterQuery, readFilter } from "./_filters.ts";
import { eventSummary, withSeries } from "./_format.ts";
import { lineageJson } from "./_lineage_json.ts";
import { MessagePage, sendPage } from "./_layout.tsx";
import { describeTarget, replayEvent } from "./_replay.ts";
import { eventStream } from "./_stream.ts";
import type { AppParts } from "./mod.ts";

/**
 * Adds the events routes to the dashboard app.
 * @param app the app, its session check and CSRF check already in front of these paths
 * @param parts what the routes read and do (see `AppParts`)
 */
export function eventRoutes(app: Hono<DashboardEnv>, parts: AppParts): void {
  const { store } = parts;
  app.get("/events", async (c) => {
    const sinceMs = parts.now() - 1; // a change in this very millisecond may follow the read
    const read = readFilter((name) => c.req.query(name));
    const { filter, beforeId } = "error" in read ? { filter: {}, beforeId: undefined } : read;
    const found = store.listEvents({ ...filter, beforeId, limit: PAGE_SIZE + 1 });
    const page = (
      <EventsPage
        events={found.slice(0, PAGE_SIZE)}
        more={found.length > PAGE_SIZE}
        filter={filter}
        beforeId={beforeId}
        csrf={c.get("session")!.csrf}
        sinceMs={sinceMs}
        subscriptions={await parts.subscriptionNames()}
        error={"error" in read ? read.error : undefined}
      />
    );
    return sendPage(c, page, "error" in read ? 400 : 200);
  });
  app.get("/events/stream", (c) => eventStream(c, parts));
  app.get("/events/:id", (c) => {
    const event = findEvent(parts, c.req.param("id"));
    if (!event) return notFound(c);
    const notice = replayNotice(c.req.query("replayed"), event);
    return sendPage(c, eventPage(c, parts, event, notice));
  });
  app.post("/events/:id/replay", async (c) => {
    const event = findEvent(parts, c.req.param("id"));
    if (!event) return notFound(c);
    try {
      const replayed = await replayEvent(event.id, {
        store,
        config: parts.config,
        nowMs: parts.now(),
      });
      parts.onReplay();
      const how = replayed.keptBecause === undefined ? "routed" : "kept";
      return c.redirect(`/events/${encodeURIComponent(event.id)}?replayed=${how}`, 303);
    } catch (error) {
      if (!(error instanceof ConflictError || error instanceof NotFoundError)) throw error;
      const notice = { ok: false, text: `Not replayed: ${error.message}` };
      return sendPage(c, eventPage(c, parts, event, notice), 409);
    }
  });
  apiRoutes(app, parts);
}

/** `GET /api/events` and `GET /api/events/:id`: what the pages show, as JSON. */
function apiRoutes(app: Hono<DashboardEnv>, parts: AppParts): void {
  app.get("/api/events", (c) => {
    const read = readFilter((name) => c.req.query(name));
    if ("error" in read) return c.json({ error: read.error }, 400);
    const found = parts.store.listEvents({
      ...read.filter,
      beforeId: read.beforeId,
      limit: PAGE_SIZE + 1,
    });
    const events = found.slice(0, PAGE_SIZE);
    const next = found.length > PAGE_SIZE
      ? `/api/events?${filterQuery(read.filter, events.at(-1)!.id)}`
      : null;
    return c.json({ events: events.map(eventSummary), next });
  });
  app.get("/api/events/:id", (c) => {
    const lineage = findLineage(parts, c.req.param("id"));
    if (!lineage) return c.json({ error: `No event "${c.req.param("id")}"` }, 404);
    return c.json(lineageJson(lineage, holdsKey(parts, lineage.event)));
  });
}

/**
 * The event with exactly this id: the pages link by whole ids, and a prefix matching several
 * events must not be an error page.
 */
function findEvent(parts: AppParts, id: string): StoredEvent | null {
  try {
    const event = parts.store.getEvent(id);
    return event?.id === id ? event : null;
  } catch (error) {
    if (error instanceof NotFoundError) return null;
    throw error;
  }
}

/** The lineage of the event with exactly this id, as {@link findEvent} finds it. */
function findLineage(parts: AppParts, id: string): Lineage | null {
  const event = findEvent(parts, id);
  return event && parts.store.lineage(event.id);
}

/** Whether the event holds its delivery id's idempotency key now. */
function holdsKey(parts: AppParts, event: StoredEvent): boolean {
  return parts.store.keyHolder(event.subscription, event.deliveryId, parts.now()) === event.id;
}

/** An event's page: its lineage, read again (a replay may have just changed it). */
function eventPage(
  c: Context<DashboardEnv>,
  parts: AppParts,
  event: StoredEvent,
  notice?: { ok: boolean; text: string },
) {
  const lineage = parts.store.lineage(event.id) ?? { event, attempts: [], parts: [] };
  return (
    <EventPage
      event={lineage.event}
      attempts={withSeries(lineage.attempts)}
      parts={lineage.parts}
      holdsKey={holdsKey(parts, lineage.event)}
      csrf={c.get("session")!.csrf}
      notice={notice}
    />
  );
}

/** What the page says after the Replay button sent the browser back to it. */
function replayNotice(
  replayed: string | undefined,
  event: StoredEvent,
): { ok: boolean; text: string } | undefined {
  if (replayed !== "routed" && replayed !== "kept") return undefined;
  const target = describeTarget(event);
  const how = replayed === "routed"
    ? `as ${event.subscription} renders and routes it now (to ${target})`
    : `with the prompt and target it had (to ${target}): its subscription cannot route it now`;
  return { ok: true, text: `Queued again, ${how}. The gateway runs it within a second.` };
}

/** The 404 page of an event that does not exist (any more: retention deletes old ones). */
function notFound(c: Context<DashboardEnv>) {
  const page = (
    <MessagePage
      title="No such event"
      message="No event has this id: it may have been deleted by retention."
    />
  );
  return sendPage(c, page, 404);
}
