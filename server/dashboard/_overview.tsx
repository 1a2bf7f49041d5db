/**
 * The overview page (`/overview`, where `/` leads): accepted, refused, delivered and failed
 * events per minute over the last hour and the last day, the queue, the agent runs in flight,
 * and the latest errors. Counts come from the store, read when the page is opened; refused
 * requests and runs in flight from the gateway's metrics, which keep them in memory.
 *
 * @module
 */
import type { Hono } from "hono";
import type { GatewayMetrics } from "../../lib/metrics/mod.ts";
import type { StoredEvent } from "../../lib/state/mod.ts";
import type { DashboardEnv } from "./_auth.ts";
import { Legend, MinuteChart, type MinuteCounts } from "./_chart.tsx";
import { duration, utcTime } from "./_format.ts";
import { Layout, sendPage } from "./_layout.tsx";
import type { AppParts } from "./mod.ts";

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** Failed events listed under "Latest errors". */
export const LATEST_ERRORS = 10;

/** What the overview reads of the gateway's metrics; without them, refused and runs are unknown. */
export type OverviewMetrics = Pick<GatewayMetrics, "refusedPerMinute" | "agentRunsInFlight">;

/**
 * Adds `GET /overview` to the dashboard app.
 * @param app the app, its session check already in front
 * @param parts the store and the clock
 * @param metrics the gateway's metrics, when it keeps them
 */
export function overviewRoutes(
  app: Hono<DashboardEnv>,
  parts: Pick<AppParts, "store" | "now">,
  metrics: OverviewMetrics | undefined,
): void {
  app.get("/overview", async (c) => {
    const nowMs = parts.now();
    const fromMs = nowMs - DAY_MS;
    const minutes = new Map<number, MinuteCounts>();
    const minute = (ms: number) => {
      let entry = minutes.get(ms);
      if (!entry) {
        entry = { minuteMs: ms, accepted: 0, refused: 0, delivered: 0, failed: 0 };
        minutes.set(ms, entry);
      }
      return entry;
    };
    for (const m of await parts.store.activity(fromMs)) Object.assign(minute(m.minuteMs), m);
    for (const m of metrics?.refusedPerMinute(fromMs) ?? []) minute(m.minuteMs).refused = m.count;
    const stats = await parts.store.queueStats();
    const errors = await parts.store.listEvents({ status: "failed", limit: LATEST_ERRORS });
    const page = (
      <OverviewPage
        nowMs={nowMs}
        minutes={[...minutes.values()]}
        queued={stats.queued}
        oldestAgeMs={stats.oldestQueuedAtMs === null ? null : nowMs - stats.oldestQueuedAtMs}
        runsInFlight={metrics?.agentRunsInFlight() ?? null}
        errors={errors}
        csrf={c.get("session")!.csrf}
      />
    );
    return sendPage(c, page);
  });
}

/** What the overview page shows. */
interface OverviewProps {
  nowMs: number;
  minutes: MinuteCounts[];
  queued: number;
  oldestAgeMs: number | null;
  runsInFlight: number | null;
  errors: StoredEvent[];
  csrf: string;
}

/** The overview page. */
function OverviewPage(props: OverviewProps) {
  const { nowMs, minutes } = props;
  return (
    <Layout title="Overview" page="overview" csrf={props.csrf}>
      <h1>Overview</h1>
      <dl class="facts">
        <dt>Queued</dt>
        <dd id="queued">{props.queued}</dd>
        <dt>Oldest waiting</dt>
        <dd id="oldest">{props.oldestAgeMs === null ? "-" : duration(props.oldestAgeMs)}</dd>
        <dt>Agent runs in flight</dt>
        <dd id="in-flight">{props.runsInFlight ?? "-"}</dd>
      </dl>
      <h2>Events per minute, last hour</h2>
      <MinuteChart label="last hour" fromMs={nowMs - HOUR_MS} toMs={nowMs} minutes={minutes} />
      <h2>Events per minute, last 24 hours</h2>
      <MinuteChart label="last day" fromMs={nowMs - DAY_MS} toMs={nowMs} minutes={minutes} />
      <Legend />
      <h2>Latest errors</h2>
      {props.errors.length === 0 ? <p>No event has failed.</p> : (
        <table id="errors">
          <thead>
            <tr>
              <th>Last change (UTC)</th>
              <th>Subscription</th>
              <th>Event</th>
              <th>Error</th>
            </tr>
          </thead>
          <tbody>
            {props.errors.map((event) => (
              <tr>
                <td>
                  <a href={`/events/${event.id}`}>{utcTime(event.updatedAtMs)}</a>
                </td>
                <td>{event.subscription}</td>
                <td>{event.eventLabel}</td>
                <td class="error">{event.lastError ?? "-"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Layout>
  );
}
