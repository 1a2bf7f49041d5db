/**
 * Replay with changes as a person uses it, in a real headless Chromium, against the real gateway
 * (`main.ts gateway run`) on real ports, with loopback servers playing Telegram and the LLM, and
 * a GitHub event signed by octokit: open the event's page, edit the prompt template, send it,
 * and see the new answer beside the previous one as a line diff, without a reload by hand. The
 * screenshots are kept in a temp dir (its path is printed).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
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

const SECRET = `sub-secret-${crypto.randomUUID()}`;
const TELEGRAM_TOKEN = `123456:tg-${crypto.randomUUID()}`;

/**
 * The loopback LLM's answer: the prompt it was given, then a verdict that depends on it, so a
 * changed template changes some lines of the answer and leaves others as they were.
 */
function answerOf(prompt: string): string {
  const verdict = prompt.startsWith("Triage") ? "Severity: high" : "Severity: low";
  return `Prompt: ${prompt}\n${verdict}\nOwner: docs team`;
}

Deno.test("dashboard in Chromium: replay an event with a changed template, see both answers and the diff", async () => {
  const screens = await Deno.makeTempDir({ prefix: "agent-replay-screens-" });
  console.log(`screenshots: ${screens}`);
  await using h = await tempHome({ config: enabledConfig(0) });
  await using telegram = startFakeTelegram({ token: TELEGRAM_TOKEN });
  const llm = await startFakeLlm({
    answer: (request) => answerOf(String(request.messages.at(-1)?.content)),
  });
  await using _llm = { [Symbol.asyncDispose]: () => llm.close() };
  const env = { AGENT_HOME: h.home, ...llm.env, ...telegram.env };
  await using gateway = await startGatewayProcess(env);
  const subscribed = await runCli([
    ...["webhook", "subscribe", "gh", "--events", "issues", "--secret", SECRET],
    ...["--prompt", "Triage: {issue.title}", "--deliver", "telegram", "--deliver-chat-id", "4242"],
  ], { ...env, WEBHOOK_PORT: new URL(gateway.url).port });
  assert.equal(subscribed.code, 0, subscribed.stderr);
  const posted = await fetch(
    `${gateway.url}/webhooks/gh`,
    await signedGitHub(SECRET, githubExample("issues", "opened"), { event: "issues" }),
  );
  await posted.body?.cancel();
  assert.equal(posted.status, 202);
  await eventually(() => telegram.messages.length === 1, { what: "the first answer delivered" });

  await using browser = await launchChromium();
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const printed = await runCli(["dashboard"], { AGENT_HOME: h.home });
  await page.goto(printed.stdout.match(/(http:\/\/\S+\/login\?code=\S+)/)![1]);
  await page.locator("#events tbody tr[data-id] a").first().click();
  await page.waitForURL(/\/events\/evt_[^/]+$/);
  const eventUrl = page.url();
  assert.equal(await page.locator("#comparison").count(), 0, "nothing to compare yet");

  await page.getByRole("link", { name: "Replay with changes" }).click();
  await page.waitForURL(/\/replay-with-changes$/);
  const template = page.locator("textarea[name=prompt]");
  assert.equal(await template.inputValue(), "Triage: {issue.title}", "the subscription's");
  assert.equal(await page.locator("input[name=render]").isChecked(), true);
  await template.fill("Summarise in one line: {issue.title}\nReporter: {issue.user.login}");
  await page.screenshot({ path: join(screens, "1-replay-form.png"), fullPage: true });
  await page.getByRole("button", { name: "Run with these changes" }).click();

  await page.waitForURL(/\?replayed=changed$/);
  await page.getByText(/Queued again with your changes \(to telegram chat 4242\)/).waitFor();
  // The page reloads itself when the run ends; the comparison is drawn on the server then.
  await page.locator("#comparison").waitFor({ timeout: 15_000 });
  const title = "Spelling error in the README file";
  assert.equal(
    await page.locator("#prompt pre").innerText(),
    `Summarise in one line: ${title}\nReporter: Codertocat`,
  );
  const removed = await page.locator("#comparison del").allInnerTexts();
  const added = await page.locator("#comparison ins").allInnerTexts();
  assert.deepEqual(removed, [`Prompt: Triage: ${title}`, "Severity: high"]);
  assert.deepEqual(added, [
    `Prompt: Summarise in one line: ${title}`,
    "Reporter: Codertocat",
    "Severity: low",
  ]);
  const same = await page.locator("#comparison tr.same td.line").allInnerTexts();
  assert.deepEqual(same, ["Owner: docs team", "Owner: docs team"], "the line both share");
  assert.match(
    await page.locator("#comparison-summary").innerText(),
    /^2 lines removed, 3 lines added\.$/,
  );
  assert.equal(telegram.messages.length, 2, "the new answer was delivered too");
  assert.equal(eventUrl, page.url().split("?")[0], "the same event, replayed");
  await page.screenshot({ path: join(screens, "2-answers-compared.png"), fullPage: true });
  await page.locator("#comparison").screenshot({ path: join(screens, "3-diff.png") });

  // Neither page shows a configured secret or the dashboard token.
  const token = (await Deno.readTextFile(join(h.home, "state", "dashboard.token"))).trim();
  for (
    const path of [new URL(eventUrl).pathname, `${new URL(eventUrl).pathname}/replay-with-changes`]
  ) {
    const text = await (await page.request.get(new URL(path, eventUrl).href)).text();
    for (const secret of [SECRET, TELEGRAM_TOKEN, token, llm.env.OPENAI_API_KEY]) {
      assert.ok(!text.includes(secret), `${path} holds a secret: …${secret.slice(-4)}`);
    }
  }
});
