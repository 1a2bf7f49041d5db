/**
 * The overview page (docs/dashboard.md#overview): events per minute over the last hour and day,
 * counted from a real store and the gateway's metrics, the queue, runs in flight, the latest
 * errors; behind the session like every page.
 */
import assert from "node:assert/strict";
import { dashboardWorld, issueEvent, logIn } from "./_helpers.ts";

const MINUTE = 60_000;

/** The `data-*` counts of each minute of the chart labelled `label`, by ISO minute. */
function chartMinutes(html: string, label: string): Map<string, Record<string, number>> {
  const svg = html.split(`aria-label="${label}"`)[1].split("</svg>")[0];
  const found = new Map<string, Record<string, number>>();
  const pattern =
    /data-minute="([^"]+)" data-accepted="(\d+)" data-refused="(\d+)" data-delivered="(\d+)" data-failed="(\d+)"/g;
  for (const [, minute, accepted, refused, delivered, failed] of svg.matchAll(pattern)) {
    found.set(minute, {
      accepted: +accepted,
      refused: +refused,
      delivered: +delivered,
      failed: +failed,
    });
  }
  return found;
}

Deno.test("overview charts accepted, refused, delivered and failed events per minute, hour and day", async () => {
  await using world = await dashboardWorld();
  const now = Math.floor(world.clock.nowMs / MINUTE) * MINUTE;
  const tenMinutesAgo = now - 10 * MINUTE;
  const fiveHoursAgo = now - 5 * 60 * MINUTE;
  for (const receivedAtMs of [tenMinutesAgo, tenMinutesAgo + 1, tenMinutesAgo + 2, fiveHoursAgo]) {
    await world.store.accept(issueEvent({ receivedAtMs }));
  }
  const [early, delivered, failed] = await world.store.claimDue(now, 3);
  assert.equal(early.receivedAtMs, fiveHoursAgo);
  await world.store.markDelivered(early.id, fiveHoursAgo + 30_000);
  await world.store.markDelivered(delivered.id, tenMinutesAgo + MINUTE);
  await world.store.markFailed(failed.id, {
    error: "telegram: chat not found",
    step: "delivery",
    nowMs: now - 2 * MINUTE,
  });
  world.clock.nowMs = now - 2 * MINUTE;
  world.metrics.webhookRequest(null, 404);
  world.metrics.webhookRequest("gh", 401);
  world.metrics.webhookRequest("gh", 202); // accepted: not refused
  world.clock.nowMs = now + 5_000;
  world.metrics.agentRunStarted();

  const session = await logIn(world);
  const home = await world.app.request("/", { headers: { cookie: session.cookie } });
  assert.equal(home.status, 303);
  assert.equal(home.headers.get("location"), "/overview");
  await home.body?.cancel();
  const response = await world.app.request("/overview", { headers: { cookie: session.cookie } });
  assert.equal(response.status, 200);
  const html = await response.text();
  const iso = (ms: number) => new Date(ms).toISOString();
  const hour = chartMinutes(html, "last hour");
  assert.deepEqual(Object.fromEntries(hour), {
    [iso(tenMinutesAgo)]: { accepted: 3, refused: 0, delivered: 0, failed: 0 },
    [iso(tenMinutesAgo + MINUTE)]: { accepted: 0, refused: 0, delivered: 1, failed: 0 },
    [iso(now - 2 * MINUTE)]: { accepted: 0, refused: 2, delivered: 0, failed: 1 },
  });
  const day = chartMinutes(html, "last day");
  assert.equal(day.size, 4, "the day adds the minute five hours ago");
  assert.deepEqual(day.get(iso(fiveHoursAgo)), {
    accepted: 1,
    refused: 0,
    delivered: 1,
    failed: 0,
  });
  assert.match(html, /<title>[^<]*3 accepted, 0 refused, 0 delivered, 0 failed<\/title>/);
  assert.match(html, /<dd id="queued">1<\/dd>/, "one event still queued");
  assert.match(html, /<dd id="oldest">10 min<\/dd>/);
  assert.match(html, /<dd id="in-flight">1<\/dd>/);
  assert.match(html, /telegram: chat not found/, "the latest error is listed");
  assert.match(html, new RegExp(`href="/events/${failed.id}"`));
  assert.doesNotMatch(html, /<script>/, "no inline script");
});

Deno.test("overview without any event draws empty charts and says no event failed", async () => {
  await using world = await dashboardWorld();
  const session = await logIn(world);
  const response = await world.app.request("/overview", { headers: { cookie: session.cookie } });
  const html = await response.text();
  assert.equal(response.status, 200);
  assert.equal(chartMinutes(html, "last hour").size, 0);
  assert.match(html, /No event has failed/);
  assert.match(html, /<dd id="oldest">-<\/dd>/);
});

Deno.test("overview needs a session: 401 and no counts without one", async () => {
  await using world = await dashboardWorld();
  await world.store.accept(issueEvent());
  const response = await world.app.request("/overview");
  assert.equal(response.status, 401);
  assert.doesNotMatch(await response.text(), /data-minute|Latest errors/);
});
