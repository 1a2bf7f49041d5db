/**
 * The subscriptions page as a person uses it, in a real headless Chromium, against the real
 * gateway (`main.ts gateway run`) with loopback servers playing Telegram and the LLM: create a
 * subscription (its secret shown once, and taken by the gateway at once), edit it, test it and
 * follow the test event to its page, remove it. A screenshot of each step is kept in a temp dir
 * (its path is printed). No response of the dashboard holds a configured secret or token, nor,
 * after the page that created it, the subscription's secret.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Page, Response as BrowserResponse } from "playwright-core";
import { startFakeTelegram } from "../../fakes/chat_servers.ts";
import { githubExample } from "../../fakes/github_examples.ts";
import { startFakeLlm } from "../../fakes/llm_server.ts";
import {
  enabledConfig,
  eventually,
  runCli,
  signedGitHub,
  startGatewayProcess,
  tempHome,
} from "../../_helpers.ts";
import { launchChromium } from "./_browser.ts";

/** Secrets configured for the run, each distinct enough to be found in any text. */
const SECRETS = {
  global: `global-secret-${crypto.randomUUID()}`,
  llmKey: `sk-llm-${crypto.randomUUID()}`,
  telegram: `123456:tg-${crypto.randomUUID()}`,
};

Deno.test("subscriptions in Chromium: create one, edit it, test it, remove it", async () => {
  const screens = await Deno.makeTempDir({ prefix: "agent-subscriptions-screens-" });
  console.log(`screenshots: ${screens}`);
  await using h = await tempHome({ config: enabledConfig(0) });
  await using telegram = startFakeTelegram({ token: SECRETS.telegram });
  const llm = await startFakeLlm({ apiKey: SECRETS.llmKey, answer: () => "An answer" });
  await using _llm = { [Symbol.asyncDispose]: () => llm.close() };
  const env = { AGENT_HOME: h.home, WEBHOOK_SECRET: SECRETS.global, ...llm.env, ...telegram.env };
  await using gateway = await startGatewayProcess(env);
  const dashboard = gateway.output().match(/dashboard: (http:\/\/\S+)/)![1];
  const printed = await runCli(["dashboard"], { AGENT_HOME: h.home });
  const link = printed.stdout.match(/(http:\/\/\S+\/login\?code=\S+)/)![1];

  await using browser = await launchChromium();
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const bodies = recordBodies(page, dashboard);
  await page.goto(link);
  await page.getByRole("link", { name: "Subscriptions" }).click();
  await page.getByText("No subscriptions yet").waitFor();

  const secret = await create(page, { screens, bodies });
  const signed = await signedGitHub(secret, githubExample("issues", "opened"), { event: "issues" });
  const taken = await fetch(`${gateway.url}/webhooks/ci`, signed);
  await taken.body?.cancel();
  assert.equal(taken.status, 202, "the gateway took the new subscription's secret at once");

  await page.fill("textarea[name=prompt]", "Edited: {issue.title}");
  await page.check("input[name=deliver-only]");
  await page.click("#f-save");
  await page.getByText('Updated subscription "ci"').waitFor();
  assert.equal(await page.inputValue("textarea[name=prompt]"), "Edited: {issue.title}");
  assert.equal(await page.isChecked("input[name=deliver-only]"), true);
  assert.match(await page.locator("h1").innerText(), /ci\s+enabled/);
  await page.screenshot({ path: join(screens, "3-edited.png"), fullPage: true });

  await page.fill("input[name=event]", "issues");
  await page.fill(
    "textarea[name=payload]",
    '{"action":"opened","issue":{"title":"From the page"}}',
  );
  await page.click("#send-test");
  await page.waitForURL(/\/subscriptions\/ci\/test$/);
  // Direct delivery: the gateway sends the message before it answers.
  const notice = await page.locator("#notice").innerText();
  assert.match(notice, /^Test event "issues.opened" sent: POST \S+\/webhooks\/ci\n200 OK\n/);
  assert.match(notice, /"status":"delivered"/);
  await page.screenshot({ path: join(screens, "4-tested.png"), fullPage: true });
  await page.click("#notice-link");
  await page.waitForURL(/\/events\/evt_/);
  await page.locator("h1 .status-delivered").waitFor(); // the page reloads on the change
  await eventually(
    () => telegram.messages.some((message) => message.text === "Edited: From the page"),
    { what: "the test event's direct message, as edited" },
  );
  await page.screenshot({ path: join(screens, "5-test-event.png"), fullPage: true });

  await page.goto(`${dashboard}/subscriptions/ci`);
  await page.click("#remove");
  await page.getByText('Removed subscription "ci"').waitFor();
  assert.equal(await page.locator("#subscriptions tr[data-name]").count(), 0);
  await page.screenshot({ path: join(screens, "6-removed.png"), fullPage: true });
  const gone = await fetch(`${gateway.url}/webhooks/ci`, signed);
  await gone.body?.cancel();
  assert.equal(gone.status, 404, "the gateway no longer serves it");

  const token = (await Deno.readTextFile(join(h.home, "state", "dashboard.token"))).trim();
  const after = bodies.slice(bodies.findIndex((body) => body.includes(secret)) + 1);
  for (const text of bodies) {
    for (const configured of [...Object.values(SECRETS), token]) {
      assert.ok(!text.includes(configured), `a response holds …${configured.slice(-4)}`);
    }
  }
  assert.ok(after.length > 3 && after.every((text) => !text.includes(secret)), "shown once");
});

/**
 * Creates subscription `ci` with the New form, as a person fills it in.
 * @returns the secret the page shows, once
 */
async function create(
  page: Page,
  options: { screens: string; bodies: string[] },
): Promise<string> {
  await page.click("#new-subscription");
  await page.fill("#f-name", "ci");
  await page.fill("#f-events", "issues");
  await page.fill("textarea[name=prompt]", "Issue: {issue.title}");
  await page.selectOption("#f-deliver", "telegram");
  await page.fill("#f-rate", "ten");
  await page.fill("#f-chat", "4242");
  await page.click("#f-save");
  await page.getByText("--rate-limit must be a whole number").waitFor();
  assert.equal(await page.inputValue("#f-chat"), "4242", "what was typed is kept");
  await page.screenshot({ path: join(options.screens, "1-refused.png"), fullPage: true });
  await page.fill("#f-rate", "10");
  await page.click("#f-save");
  await page.getByText('Created subscription "ci"').waitFor();
  const notice = await page.locator("#notice").innerText();
  const secret = notice.match(/Secret: +(\S+)/)![1];
  assert.match(await page.locator("#secret").innerText(), new RegExp(`…${secret.slice(-4)}$`));
  await page.screenshot({ path: join(options.screens, "2-created.png"), fullPage: true });
  await page.getByRole("link", { name: "Subscriptions" }).click();
  const row = page.locator('#subscriptions tr[data-name="ci"]');
  assert.match(await row.innerText(), /\/webhooks\/ci\s+issues\s+telegram chat 4242\s+agent run/);
  assert.match(await row.innerText(), /10\/min\s+enabled\s+…/);
  await row.getByRole("link", { name: "ci" }).click();
  await page.waitForURL(/\/subscriptions\/ci$/);
  return secret;
}

/** Keeps every response body of the dashboard the page received, in order. */
function recordBodies(page: Page, dashboardUrl: string): string[] {
  const bodies: string[] = [];
  page.on("response", (response: BrowserResponse) => {
    if (!response.url().startsWith(dashboardUrl)) return;
    if (response.headers()["content-type"]?.includes("event-stream")) return;
    // In the order the responses came, whenever their bodies are read.
    const index = bodies.push("") - 1;
    response.text().then((text) => bodies[index] = text, () => {});
  });
  return bodies;
}
