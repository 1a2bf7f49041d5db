/**
 * The events page's live updates in a real headless Chromium, under load: when more events
 * arrive between two reads of the feed than a page shows, the page stays the first page, as a
 * reload would show it, and its "Older" link goes on from its last row.
 */
import assert from "node:assert/strict";
import { ensureToken, makeLoginCode } from "../../../server/dashboard/mod.ts";
import { PAGE_SIZE } from "../../../server/dashboard/_events_page.tsx";
import { eventually } from "../../_helpers.ts";
import { launchChromium } from "./_browser.ts";
import { dashboardWorld, issueEvent } from "./_helpers.ts";

Deno.test("events page in Chromium stays the first page when a burst outgrows it", async () => {
  await using world = await dashboardWorld();
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request) => world.app.fetch(request),
  );
  const url = `http://127.0.0.1:${server.addr.port}`;
  for (let i = 0; i < 10; i++) await world.store.accept(issueEvent());
  await using browser = await launchChromium();
  const page = await browser.newPage();
  const code = await makeLoginCode(await ensureToken(world.tokenPath), world.clock.nowMs);
  await page.goto(`${url}/login?code=${code}`);
  await page.goto(`${url}/events`);
  await page.locator("#live").waitFor({ state: "visible" });
  for (let i = 0; i < PAGE_SIZE + 25; i++) await world.store.accept(issueEvent());
  await world.tick();
  const firstPage = (await world.store.listEvents({ limit: PAGE_SIZE })).map((event) => event.id);
  const rows = page.locator("#events tbody tr[data-id]");
  await eventually(async () => (await rows.first().getAttribute("data-id")) === firstPage[0], {
    what: "the newest event at the top",
  });
  const shown = await rows.evaluateAll((all) => all.map((row) => row.getAttribute("data-id")));
  assert.deepEqual(shown, firstPage, "the rows a reload would show");
  const older = await page.locator(".pager a", { hasText: "Older" }).getAttribute("href");
  assert.equal(older, `/events?before=${firstPage.at(-1)}`);
  await page.close();
});
