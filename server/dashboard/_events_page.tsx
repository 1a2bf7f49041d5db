/**
 * The events page: the recent events, newest first, filtered by subscription, status, event
 * type and delivery id, a page at a time by cursor; on the first page new events and status
 * changes arrive live (`/events/stream`, with the page's filters).
 *
 * @module
 */
import type { StoredEvent } from "../../lib/state/mod.ts";
import { filterQuery, type PageFilter } from "./_filters.ts";
import { eventSummary, STATUSES } from "./_format.ts";
import { Layout } from "./_layout.tsx";

/** Events on a page. */
export const PAGE_SIZE = 50;

/** What the events page shows. */
export interface EventsPageProps {
  /** The page's events, newest first (at most {@link PAGE_SIZE}). */
  events: StoredEvent[];
  /** Whether older events match too (an "Older" link is shown). */
  more: boolean;
  filter: PageFilter;
  /** The cursor the page starts after; absent on the first page, the live one. */
  beforeId?: string;
  /** The session's CSRF token. */
  csrf: string;
  /** When the page's events were read, in ms: the live updates catch up from then. */
  sinceMs: number;
  /** Subscription names offered in the filter. */
  subscriptions: string[];
  /** A bad filter, said above the table. */
  error?: string;
}

/** The events page. */
export function EventsPage(props: EventsPageProps) {
  const { events, filter, beforeId } = props;
  const query = filterQuery(filter);
  const stream = beforeId
    ? undefined
    : `/events/stream?${query}${query ? "&" : ""}since=${props.sinceMs}`;
  const filtered = query !== "";
  return (
    <Layout title="Events" page="events" csrf={props.csrf} stream={stream} status={filter.status}>
      <h1>
        Events <span id="live" class="live" hidden>live</span>
      </h1>
      {props.error && <div class="notice bad">{props.error}</div>}
      <Filters filter={filter} subscriptions={props.subscriptions} />
      <table id="events">
        <thead>
          <tr>
            <th>Received (UTC)</th>
            <th>Subscription</th>
            <th>Event</th>
            <th>Delivery id</th>
            <th>Status</th>
            <th>Tries</th>
            <th>Took</th>
          </tr>
        </thead>
        <tbody>
          {events.map((event) => <EventRow key={event.id} event={event} />)}
          {events.length === 0 && (
            <tr class="empty">
              <td colspan={7}>
                {filtered || beforeId
                  ? "No events match."
                  : "No events yet. Send one with: agent webhook test <name>"}
              </td>
            </tr>
          )}
        </tbody>
      </table>
      <div class="pager">
        {beforeId && <a href={`/events${query ? `?${query}` : ""}`}>« Newest</a>}
        {props.more && events.length > 0 && (
          <a href={`/events?${filterQuery(filter, events.at(-1)!.id)}`}>Older »</a>
        )}
      </div>
    </Layout>
  );
}

/** The filter form: a GET, so it works without the script and its URL can be kept. */
function Filters(props: { filter: PageFilter; subscriptions: string[] }) {
  const { filter } = props;
  return (
    <form class="filters" method="get" action="/events">
      <label>
        Subscription
        <input name="subscription" list="subscription-names" value={filter.subscription ?? ""} />
        <datalist id="subscription-names">
          {props.subscriptions.map((name) => <Choice key={name} value={name} />)}
        </datalist>
      </label>
      <label>
        Status
        <select name="status">
          <option value="">any</option>
          {STATUSES.map((status) => (
            <option value={status} selected={filter.status === status}>{status}</option>
          ))}
        </select>
      </label>
      <label>
        Event type
        <input name="type" placeholder="issues, issues.opened" value={filter.eventType ?? ""} />
      </label>
      <label>
        Delivery id
        <input name="delivery" value={filter.deliveryId ?? ""} />
      </label>
      <button type="submit" class="primary">Filter</button>
      <a class="button" href="/events">Clear</a>
    </form>
  );
}

/** A value offered by a `<datalist>`. */
function Choice(props: { value: string }) {
  return <option value={props.value} />;
}

/** One event's row, as the script draws one (see `LIVE_SCRIPT`). */
function EventRow(props: { event: StoredEvent }) {
  const summary = eventSummary(props.event);
  return (
    <tr data-id={summary.id}>
      <td class="mono">
        <a href={`/events/${encodeURIComponent(summary.id)}`}>{summary.received}</a>
      </td>
      <td>{summary.subscription}</td>
      <td class="mono">{summary.event}</td>
      <td class="mono">{summary.delivery_id}</td>
      <td
        class={`status status-${summary.status}`}
        title={summary.last_error ?? undefined}
      >
        {summary.status}
      </td>
      <td>{String(summary.attempts)}</td>
      <td>{summary.took}</td>
    </tr>
  );
}
