/**
 * The template playground as a person uses it, in a real headless Chromium: the dashboard app
 * served on a real loopback port over a real SQLite store, logged in with the link `agent
 * dashboard` makes; typing in the template re-renders the prompt without a reload, the missing
 * path marked, the estimate following; the CSP lets the embedded script run.
 */
import assert from "node:assert/strict";
import { ensureToken, makeLoginCode } from "../../../server/dashboard/mod.ts";
import { dashboardWorld, issueEvent } from "./_helpers.ts";
import { launchChromium } from "./_browser.ts";

Deno.test("playground re-renders the prompt as you type, the missing path marked", async () => {
  await using world = await dashboardWorld({
    subscriptions: { gh: { events: ["issues"], prompt: "Triage {issue.title}", deliver: "log" } },
  });
  await world.store.accept(issueEvent());
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    (request) => world.app.fetch(request),
  );
  await using _server = { [Symbol.asyncDispose]: () => server.shutdown() };
  const base = `http://127.0.0.1:${server.addr.port}`;
  await using browser = await launchChromium();
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(error.message));
  page.on("console", (message) => {
    // A failed load is told below with its address (the browser asks for /favicon.ico).
    if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) {
      errors.push(message.text());
    }
  });
  page.on("response", (response) => {
    const path = new URL(response.url()).pathname;
    if (response.status() >= 400 && path !== "/favicon.ico") {
      errors.push(`${response.status()} ${path}`);
    }
  });

  const code = await makeLoginCode(await ensureToken(world.tokenPath), world.clock.nowMs);
  await page.goto(`${base}/login?code=${code}`);
  await page.goto(`${base}/playground`);
  assert.equal(await page.textContent("#pg-text"), "Triage Crash on start");

  await page.fill("#pg-template", "#{issue.number}: {issue.title} by {issue.user.login}");
  await page.locator("#pg-text", { hasText: "#7: " }).waitFor();
  assert.equal(page.url(), `${base}/playground`, "rendered in place, not by a reload");
  assert.equal(await page.textContent("#pg-text"), "#7: Crash on start by {issue.user.login}");
  assert.equal(await page.textContent("#pg-text mark.missing"), "{issue.user.login}");
  assert.match(
    await page.textContent("#pg-missing") ?? "",
    /Missing in the payload: \{issue.user.login\}/,
  );
  assert.match(await page.textContent("#pg-tokens") ?? "", /≈ 10 tokens \(40 characters/);
  assert.deepEqual(errors, [], "no script error, nothing the CSP refused");
});
