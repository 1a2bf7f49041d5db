/**
 * The dashboard as a person uses it, in a real headless Chromium, against the real gateway
 * (`main.ts gateway run`) on real ports, with loopback servers playing Telegram and the LLM, and
 * a GitHub event signed by octokit: log in with the link `agent dashboard` prints, watch the
 * event arrive and be delivered without a reload, open its story, replay it. A screenshot of
 * each page is kept in a temp dir (its path is printed). Along the way: no response of the
 * dashboard holds a configured secret or token, the login link works once, and a page of
 * another origin cannot make the dashboard replay.
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
  type GatewayProcess,
  runCli,
  signedGitHub,
  startGatewayProcess,
  tempHome,
} from "../../_helpers.ts";
import { launchChromium } from "./_browser.ts";

/** Secrets configured for the run, each distinct enough to be found in any text. */
const SECRETS = {
  subscription: `sub-secret-${crypto.randomUUID()}`,
  global: `global-secret-${crypto.randomUUID()}`,
  llmKey: `sk-llm-${crypto.randomUUID()}`,
  telegram: `123456:tg-${crypto.randomUUID()}`,
};

/** The model the loopback LLM says answered: a dated version, as OpenAI names them. */
const ANSWERED_MODEL = "test-model-2026-01-01";

/** What a test sees of the gateway it started. */
interface World {
  gateway: GatewayProcess;
  dashboardUrl: string;
  home: string;
  llmRequests: () => number;
  /** The `usage` the LLM answered each request with. */
  llmUsage: () => ({ prompt_tokens: number; completion_tokens: number } | undefined)[];
  telegramTexts: () => string[];
  /** The dashboard token, read from its file. */
  token: () => Promise<string>;
}

/** Starts the fakes and the gateway, subscribes `gh` and runs `body` with them. */
async function withWorld(body: (world: World) => Promise<void>): Promise<void> {
  await using h = await tempHome({ config: enabledConfig(0) });
  await using telegram = startFakeTelegram({ token: SECRETS.telegram });
  const llm = await startFakeLlm({
    apiKey: SECRETS.llmKey,
    answeredModel: ANSWERED_MODEL,
    answer: (request) => `Answer #${request.messages.length}: ${request.messages.at(-1)?.content}`,
  });
  await using _llm = { [Symbol.asyncDispose]: () => llm.close() };
  const env = { AGENT_HOME: h.home, WEBHOOK_SECRET: SECRETS.global, ...llm.env, ...telegram.env };
  await using gateway = await startGatewayProcess(env);
  const dashboardUrl = gateway.output().match(/dashboard: (http:\/\/\S+)/)![1];
  const cliEnv = { ...env, WEBHOOK_PORT: new URL(gateway.url).port };
  const sub = await runCli([
    ...["webhook", "subscribe", "gh", "--events", "issues", "--secret", SECRETS.subscription],
    ...["--prompt", "Triage: {issue.title}", "--deliver", "telegram", "--deliver-chat-id", "4242"],
  ], cliEnv);
  assert.equal(sub.code, 0, sub.stderr);
  await body({
    gateway,
    dashboardUrl,
    home: h.home,
    llmRequests: () => llm.requests.length,
    llmUsage: () => llm.requests.map((request) => request.usage),
    telegramTexts: () => telegram.messages.map((message) => message.text),
    token: async () => (await Deno.readTextFile(join(h.home, "state", "dashboard.token"))).trim(),
  });
}

/** A login link, as `agent dashboard` prints it. */
async function loginLink(world: World): Promise<string> {
  const printed = await runCli(["dashboard"], { AGENT_HOME: world.home });
  assert.equal(printed.code, 0, printed.stderr);
  return printed.stdout.match(/(http:\/\/\S+\/login\?code=\S+)/)![1];
}

/** Posts GitHub's own `issues.opened` example, signed as GitHub signs it. */
async function postIssue(world: World): Promise<void> {
  const response = await fetch(
    `${world.gateway.url}/webhooks/gh`,
    await signedGitHub(SECRETS.subscription, githubExample("issues", "opened"), {
      event: "issues",
    }),
  );
  await response.body?.cancel();
  assert.equal(response.status, 202);
}

/** Keeps every response body of the dashboard the page received, for the secrets check. */
function recordBodies(page: Page, dashboardUrl: string): string[] {
  const bodies: string[] = [];
  page.on("response", (response: BrowserResponse) => {
    if (!response.url().startsWith(dashboardUrl)) return;
    if (response.headers()["content-type"]?.includes("event-stream")) return; // read below
    response.text().then((text) => bodies.push(text), () => {});
  });
  return bodies;
}

/** Fails when any text holds a configured secret or the dashboard token. */
async function assertNoSecret(world: World, texts: string[]): Promise<void> {
  const secrets = [...Object.values(SECRETS), await world.token()];
  for (const text of texts) {
    for (const secret of secrets) {
      assert.ok(!text.includes(secret), `a response holds a secret: …${secret.slice(-4)}`);
    }
  }
}

Deno.test("dashboard in Chromium: log in, watch an event arrive live, read its story, replay it", async () => {
  const screens = await Deno.makeTempDir({ prefix: "agent-dashboard-screens-" });
  console.log(`screenshots: ${screens}`);
  await withWorld(async (world) => {
    await using browser = await launchChromium();
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const bodies = recordBodies(page, world.dashboardUrl);
    await page.goto(await loginLink(world));
    assert.equal(new URL(page.url()).pathname, "/events");
    assert.equal(page.url().includes("code="), false, "the code left the address bar");
    await page.getByText("No events yet").waitFor();
    await page.locator("#live").waitFor({ state: "visible" });
    await page.screenshot({ path: join(screens, "1-events-empty.png"), fullPage: true });

    let loads = 0;
    page.on("load", () => loads++);
    await postIssue(world);
    const row = page.locator("#events tbody tr[data-id]");
    await row.first().waitFor();
    await page.locator("#events tbody tr[data-id] .status-delivered").waitFor();
    assert.equal(loads, 0, "the event arrived and was delivered without a reload");
    assert.equal(await row.count(), 1);
    assert.match(await row.first().innerText(), /gh\s+issues\.opened\s+\S+\s+delivered\s+1/i);
    await page.screenshot({ path: join(screens, "2-events-live.png"), fullPage: true });

    await row.first().locator("a").click();
    await page.waitForURL(/\/events\/evt_/);
    const payload = await page.locator("#payload").innerText();
    assert.match(payload, /Spelling error in the README file/, "the issue's title in the payload");
    const prompt = await page.locator("#prompt pre").innerText();
    assert.equal(prompt, "Triage: Spelling error in the README file");
    const answer = await page.locator("#answer pre").innerText();
    assert.match(answer, /^Answer #\d+: Triage: Spelling error in the README file/);
    assert.ok(world.telegramTexts().some((text) => text.includes("Answer #")), "sent to Telegram");
    await assertLineage(page, world);
    await page.screenshot({ path: join(screens, "3-event-detail.png"), fullPage: true });
    // The README's picture: the headers and the payload folded, the page down to the delivery.
    await page.locator("summary", { hasText: /^Headers/ }).click();
    await page.locator("#payload details > summary").first().click();
    const bottom = await page.locator("#delivery").evaluate((section) =>
      section.getBoundingClientRect().bottom + section.ownerDocument.scrollingElement!.scrollTop
    );
    await page.screenshot({
      path: join(screens, "3-event-detail-story.png"),
      fullPage: true,
      clip: { x: 0, y: 0, width: 1280, height: Math.ceil(bottom + 24) },
    });

    const runs = world.llmRequests();
    await page.getByRole("button", { name: "Replay" }).click();
    await page.getByText(/Queued again, as gh renders and routes it now/).waitFor();
    await eventually(() => world.llmRequests() > runs, { what: "the replay's agent run" });
    await page.locator("h1 .status-delivered").waitFor(); // the page reloads on the change
    assert.match(await page.locator("#attempts").innerText(), /\n2\s+1\s/, "a second series");
    await page.screenshot({ path: join(screens, "4-event-replayed.png"), fullPage: true });

    await assertNoSecret(world, [...bodies, ...await apiBodies(page, world)]);

    await page.getByRole("link", { name: "Overview" }).click();
    await page.waitForURL(/\/overview$/);
    const minute = page.locator('svg[aria-label="last hour"] g.minute').last();
    assert.equal(await minute.getAttribute("data-delivered"), "1", "the replay's delivery");
    await page.screenshot({ path: join(screens, "5-overview.png"), fullPage: true });
  });
});

/**
 * The detail page and `/api/events/<id>` tell the event's lineage: the request's headers as
 * stored (the signature redacted) and the scheme, the model that answered with its token counts,
 * the answer, and the message id Telegram gave the part it took.
 */
async function assertLineage(page: Page, world: World): Promise<void> {
  const received = await page.locator("#received").innerText();
  assert.match(received, /Verified by\s+github/);
  assert.match(received, /x-github-event\s+issues/i);
  assert.match(received, /x-hub-signature-256\s+\[redacted\]/i);
  const usage = world.llmUsage()[0]!;
  const run = page.locator("#attempts .run").first();
  assert.equal(await run.locator(".model").innerText(), ANSWERED_MODEL);
  assert.equal(await run.locator(".prompt-tokens").innerText(), String(usage.prompt_tokens));
  assert.equal(
    await run.locator(".completion-tokens").innerText(),
    String(usage.completion_tokens),
  );
  await run.getByText("This run's answer").click();
  assert.match(await run.locator("pre").innerText(), /^Answer #\d+: Triage: Spelling error/);
  const sent = world.telegramTexts().findIndex((text) => text.includes("Answer #"));
  const telegramId = String(sent + 1); // the fake numbers the messages it takes from 1
  const delivered = page.locator("#delivery tbody tr").first();
  assert.match(await delivered.innerText(), /1\/1\s+telegram\s+4242/);
  assert.equal(await delivered.locator(".message-id").innerText(), telegramId);

  const id = page.url().split("/events/")[1].split("?")[0];
  const api = await (await page.request.get(`${world.dashboardUrl}/api/events/${id}`)).json();
  assert.equal(api.scheme, "github");
  assert.equal(api.headers["x-hub-signature-256"], "[redacted]");
  assert.deepEqual(api.attempts_detail[0].run, {
    provider: "openai",
    model: ANSWERED_MODEL,
    prompt_tokens: usage.prompt_tokens,
    completion_tokens: usage.completion_tokens,
    duration_ms: api.attempts_detail[0].run.duration_ms,
  });
  assert.match(api.attempts_detail[0].answer, /^Answer #\d+: Triage/);
  assert.equal(api.parts[0].message_id, telegramId);
  assert.equal(api.parts[0].target, "telegram");
}

/** Every API and page of the dashboard, as the browser's session fetches them. */
async function apiBodies(page: Page, world: World): Promise<string[]> {
  const id = page.url().split("/events/")[1].split("?")[0];
  const paths = [
    "/",
    "/overview",
    "/events",
    "/events?status=delivered",
    `/events/${id}`,
    "/api/events",
    `/api/events/${id}`,
    "/login",
    "/no-such-page",
    "/subscriptions",
    "/subscriptions/gh",
    "/subscriptions?new",
    "/assets/app.js",
    "/assets/app.css",
  ];
  const texts: string[] = [];
  for (const path of paths) {
    const response = await page.request.get(`${world.dashboardUrl}${path}`);
    texts.push(await response.text());
  }
  // The live stream's first messages: what it caught up with.
  texts.push(
    await page.evaluate(async (url) => {
      const response = await fetch(url);
      const reader = response.body!.getReader();
      const { value } = await reader.read();
      await reader.cancel();
      return new TextDecoder().decode(value);
    }, `${world.dashboardUrl}/events/stream?since=0`),
  );
  return texts;
}

Deno.test("dashboard in Chromium: the login link works once, and another origin's form cannot replay", async () => {
  await withWorld(async (world) => {
    await using browser = await launchChromium();
    const link = await loginLink(world);
    const session = await browser.newContext();
    const page = await session.newPage();
    await page.goto(link);
    await postIssue(world);
    await page.locator("#events tbody tr[data-id] .status-delivered").waitFor();
    const id = await page.locator("#events tbody tr[data-id]").first().getAttribute("data-id");

    const stranger = await browser.newPage(); // a context of its own: no cookie
    const second = await stranger.goto(link);
    assert.equal(second?.status(), 403);
    await stranger.getByText("This login link does not work").waitFor();

    // A page of the same site (127.0.0.1, another port): the SameSite cookie goes with its
    // POST, so only the CSRF checks stand in the way.
    await using evil = serveEvilForm(`${world.dashboardUrl}/events/${id}/replay`);
    const attacked = await session.newPage();
    await attacked.goto(evil.url);
    const [answer] = await Promise.all([
      attacked.waitForResponse((r) => r.url().endsWith("/replay")),
      attacked.click("button"),
    ]);
    assert.equal(answer.status(), 403);
    const runs = world.llmRequests();
    const api = await page.request.get(`${world.dashboardUrl}/api/events/${id}`);
    assert.equal((await api.json()).status, "delivered", "not queued again");
    assert.equal(world.llmRequests(), runs);
  });
});

/** A page on another port of 127.0.0.1 with a form that posts to `target`. */
function serveEvilForm(target: string): { url: string } & AsyncDisposable {
  const html = `<!DOCTYPE html><form method="post" action="${target}">` +
    `<input type="hidden" name="_csrf" value="guess"><button>Win a prize</button></form>`;
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () => new Response(html, { headers: { "content-type": "text/html" } }),
  );
  return {
    url: `http://127.0.0.1:${server.addr.port}/`,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}
