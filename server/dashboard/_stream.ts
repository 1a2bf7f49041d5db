/**
 * `GET /events/stream`: the live updates of a page, as server-sent events
 * (https://html.spec.whatwg.org/multipage/server-sent-events.html). Each `change` message is an
 * event's summary (`eventSummary`). The page says what it shows: the filters of the events page,
 * or `id=` for an event's page; and `since=`, in ms: the events it may show changed after then
 * are sent first, so no change falls between the page and its stream. The events page gives
 * the millisecond before it read them; an event's page, the time of the change it shows, so
 * that the same version does not come back to it. Then come the changes of what the page shows,
 * as the live feed (`_feed.ts`) reads them, in one write a tick: on the events page, the first
 * page of its filter, whose newest events push older ones off it.
 *
 * The stream checks its session every few seconds: once the token is rotated it sends `end`
 * and closes, and the page reloads into the login page.
 *
 * @module
 */
import type { Context } from "hono";
import { getCookie } from "hono/cookie";
import { streamSSE } from "hono/streaming";
import type { StateStore, StoredEvent } from "../../lib/state/mod.ts";
import { type AuthDeps, currentToken, type DashboardEnv } from "./_auth.ts";
import type { EventFeed } from "./_feed.ts";
import { readFilter } from "./_filters.ts";
import { eventSummary } from "./_format.ts";
import { checkSession } from "./_sessions.ts";
import { PAGE_SIZE } from "./_events_page.tsx";

/** Feed ticks (about seconds) between two checks of the stream's session. */
const SESSION_CHECK_TICKS = 5;
/** Feed ticks between two comments that keep an idle connection from being cut by a proxy. */
const KEEP_ALIVE_TICKS = 15;

/** What the stream reads and listens to. */
export interface StreamDeps {
  store: Pick<StateStore, "listEvents" | "getEvent">;
  feed: EventFeed;
  auth: AuthDeps;
  /** Aborted when the dashboard stops: every stream ends. */
  closing: AbortSignal;
}

/**
 * Answers `GET /events/stream` (behind the session check).
 * @param c the request's context
 * @param deps the store, the feed, the session check's needs and the stop signal
 * @returns a `text/event-stream` response, or 400 for a bad filter
 */
export function eventStream(c: Context<DashboardEnv>, deps: StreamDeps): Response {
  const read = readFilter((name) => c.req.query(name));
  if ("error" in read) return c.json({ error: read.error }, 400);
  const id = c.req.query("id");
  const sinceMs = Number(c.req.query("since") ?? "0");
  const cookie = getCookie(c, deps.auth.cookieName);
  const response = streamSSE(c, async (stream) => {
    const done = Promise.withResolvers<void>();
    let ended = false;
    const end = () => {
      ended = true;
      done.resolve();
    };
    // Registered before the first read: Hono calls no abort handler added after the abort, and
    // its writes swallow the error of a closed connection, so a page closed during the read
    // would leave its view in the feed until the dashboard stops.
    stream.onAbort(end);
    const signals = [c.req.raw.signal, deps.closing];
    if (signals.some((signal) => signal.aborted)) return;
    for (const signal of signals) signal.addEventListener("abort", end, { once: true });
    const unlisten = () => signals.forEach((signal) => signal.removeEventListener("abort", end));
    let writing = Promise.resolve();
    const write = (text: string) => {
      if (text !== "") writing = writing.then(() => stream.write(text)).then(() => {});
    };
    // One write a tick, however many changes: each write is a chunk through the HTTP server.
    const changes = (events: StoredEvent[]) =>
      events.map((event) => `event: change\ndata: ${JSON.stringify(eventSummary(event))}\n\n`)
        .join("");
    write("retry: 2000\n\n");
    // The feed starts a view nobody follows yet from this very read, so that no change falls
    // between the two.
    const caughtUp = id
      ? [await deps.store.getEvent(id)].filter((event) => event !== null)
      : (await deps.store.listEvents({ ...read.filter, limit: PAGE_SIZE })).reverse();
    if (ended || stream.aborted) return unlisten();
    write(changes(caughtUp.filter((event) => event.updatedAtMs > sinceMs)));
    let ticks = 0;
    const view = id ? { eventId: id } : { filter: read.filter };
    const stop = deps.feed.listen(view, (changed) => {
      ticks += 1;
      write(changes(changed) + (ticks % KEEP_ALIVE_TICKS === 0 ? ": keep-alive\n\n" : ""));
      if (ticks % SESSION_CHECK_TICKS === 0) {
        sessionValid(deps.auth, cookie).then((valid) => {
          if (!valid) write("event: end\ndata: the session ended\n\n");
          if (!valid) writing.then(end);
        });
      }
    }, caughtUp);
    await done.promise;
    stop();
    unlisten();
    await writing;
  });
  // Deno.serve compresses text for browsers that accept gzip, which would hold the messages back
  // until a compressed block fills; no-transform turns that off.
  response.headers.set("Cache-Control", "no-cache, no-transform");
  return response;
}

/** Whether a session cookie is still valid with the token in the file now. */
async function sessionValid(auth: AuthDeps, cookie: string | undefined): Promise<boolean> {
  const token = await currentToken(auth);
  return token !== null && (await checkSession(token, cookie, auth.now())) !== null;
}
