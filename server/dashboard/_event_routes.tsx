/**
 * The dashboard's routes about events, behind the session check: the events page and its live
 * stream, an event's page (its lineage), and the same as JSON (`/api/events`,
 * `/api/events/<id>`); its Replay buttons are in `_replay_routes.tsx`.
 *
 * @module
 */
import type { Hono } from "hono";
import type { Lineage } from "../../lib/state/mod.ts";
import type { DashboardEnv } from "./_auth.ts";
import { eventPage, findEvent, holdsKey, notFound } from "./_event_page.tsx";
import { EventsPage, PAGE_SIZE } from "./_events_page.tsx";
import { filterQuery, readFilter } from "./_filters.ts";
import { eventSummary } from "./_format.ts";
import { lineageJson } from "./_lineage_json.ts";
import { sendPage } from "./_layout.tsx";
import { replayNotice, replayRoutes } from "./_replay_routes.tsx";
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
    const found = await store.listEvents({ ...filter, beforeId, limit: PAGE_SIZE + 1 });
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
  app.get("/events/:id", async (c) => {
    const event = await findEvent(parts, c.req.param("id"));
    if (!event) return notFound(c);
    const notice = replayNotice(c.req.query("replayed"), event);
    return sendPage(c, await eventPage(c, parts, { event, notice }));
  });
  replayRoutes(app, parts);
  apiRoutes(app, parts);
}

/** `GET /api/events` and `GET /api/events/:id`: what the pages show, as JSON. */
function apiRoutes(app: Hono<DashboardEnv>, parts: AppParts): void {
  app.get("/api/events", async (c) => {
    const read = readFilter((name) => c.req.query(name));
    if ("error" in read) return c.json({ error: read.error }, 400);
    const found = await parts.store.listEvents({
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
  app.get("/api/events/:id", async (c) => {
    const lineage = await findLineage(parts, c.req.param("id"));
    if (!lineage) return c.json({ error: `No event "${c.req.param("id")}"` }, 404);
    return c.json(lineageJson(lineage, await holdsKey(parts, lineage.event)));
  });
}

/** The lineage of the event with exactly this id, as {@link findEvent} finds it. */
async function findLineage(parts: AppParts, id: string): Promise<Lineage | null> {
  const event = await findEvent(parts, id);
  return event && await parts.store.lineage(event.id);
}
