/**
 * The filters of the events page, as its query string carries them (`?subscription=gh&
 * status=failed&type=issues&delivery=...&before=<id>`), shared by the page, its live updates
 * and `GET /api/events`.
 *
 * @module
 */
import type { EventFilter, EventStatus } from "../../lib/state/mod.ts";
import { STATUSES } from "./_format.ts";

/** Longest value of a filter, in characters: no name, label or delivery id is longer. */
const MAX_FILTER_CHARS = 256;

/** The events page's filters, without the cursor and the page size. */
export type PageFilter = Pick<EventFilter, "subscription" | "status" | "eventType" | "deliveryId">;

/** The query parameter of each filter. */
const PARAMETERS = {
  subscription: "subscription",
  status: "status",
  eventType: "type",
  deliveryId: "delivery",
} as const;

/**
 * Reads the filters and the cursor from a query string; empty values are no filter.
 * @param query reads one query parameter
 * @returns the filter and the cursor (`before`), or the error to show for a bad value
 */
export function readFilter(
  query: (name: string) => string | undefined,
): { filter: PageFilter; beforeId?: string } | { error: string } {
  const filter: PageFilter = {};
  for (const [field, parameter] of Object.entries(PARAMETERS)) {
    const value = query(parameter)?.trim();
    if (!value) continue;
    if (value.length > MAX_FILTER_CHARS) {
      return { error: `${parameter} must be at most ${MAX_FILTER_CHARS} characters` };
    }
    if (field === "status" && !STATUSES.includes(value as EventStatus)) {
      return { error: `status must be one of: ${STATUSES.join(", ")}` };
    }
    (filter as Record<string, string>)[field] = value;
  }
  const before = query("before")?.trim();
  if (before && before.length > MAX_FILTER_CHARS) {
    return { error: `before must be at most ${MAX_FILTER_CHARS} characters` };
  }
  return before ? { filter, beforeId: before } : { filter };
}

/**
 * The query string of a filter (and a cursor), for links and the live updates' URL.
 * @returns `subscription=gh&status=failed...`, without `?`; empty for no filter
 */
export function filterQuery(filter: PageFilter, beforeId?: string): string {
  const params = new URLSearchParams();
  for (const [field, parameter] of Object.entries(PARAMETERS)) {
    const value = filter[field as keyof PageFilter];
    if (value) params.set(parameter, value);
  }
  if (beforeId) params.set("before", beforeId);
  return params.toString();
}
