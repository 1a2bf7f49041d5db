/**
 * End to end, in process: an event's conversation in its lineage, through the real gateway
 * (`startGateway` on port 0, its dashboard too), a loopback OpenAI-compatible endpoint and the
 * Telegram fake, with GitHub payloads signed by `@octokit/webhooks-methods`. The earlier turns
 * that `agent webhook show` and the dashboard's event page say a run was given are the turns
 * the LLM endpoint got, the budget's cut included.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { webhookShow } from "../../commands/webhook_show.ts";
import { loadConfig } from "../../lib/config/mod.ts";
import { dashboardTokenPath, ensureToken, makeLoginCode } from "../../server/dashboard/mod.ts";
import { startGateway } from "../../server/gateway.ts";
import { startFakeTelegram } from "../fakes/chat_servers.ts";
import { githubExample } from "../fakes/github_examples.ts";
import { type FakeLlmRequest, startFakeLlm } from "../fakes/llm_server.ts";
import { enabledConfig, eventually, fakeContext, signedGitHub, tempHome } from "../_helpers.ts";

const SECRET = "lineage-steps-secret-0123";
const ISSUE = githubExample("issues", "opened");

/** The earlier turns a request to the LLM carried: its answers from the assistant. */
function turnsCarried(request: FakeLlmRequest): number {
  return request.messages.filter((message) => message.role === "assistant").length;
}

Deno.test("show and the event page count the earlier turns the LLM was given, the budget's cut included", async () => {
  const dashboard = "dashboard:\n  host: 127.0.0.1\n  port: 0\n";
  await using home = await tempHome({ config: enabledConfig(0) + dashboard });
  // Each turn is about 20 tokens (a title of 40 characters, an answer of 50): 50 hold two.
  await Deno.writeTextFile(
    join(home.home, "webhook_subscriptions.json"),
    JSON.stringify({
      gh: {
        secret: SECRET,
        prompt: "{issue.title}",
        deliver: "telegram",
        deliver_extra: { chat_id: "4242" },
        session: "{repository.full_name}#{issue.number}",
        session_budget: 50,
      },
    }),
  );
  await using telegram = startFakeTelegram();
  const llm = await startFakeLlm({
    answer: (request) => `answer to ${request.messages.at(-1)!.content}`,
  });
  const env = { AGENT_HOME: home.home, HOME: "/nonexistent", ...telegram.env, ...llm.env };
  const config = await loadConfig(env);
  await using stack = new AsyncDisposableStack();
  stack.defer(() => llm.close());
  const gateway = await startGateway(config, { dashboard: true });
  stack.defer(() => gateway.stop());
  const ids: string[] = [];
  for (const n of [1, 2, 3, 4]) {
    const title = `turn ${n} `.padEnd(40, ".");
    const payload = { ...ISSUE, issue: { ...(ISSUE.issue as object), number: 7, title } };
    const response = await fetch(
      `${gateway.url}/webhooks/gh`,
      await signedGitHub(SECRET, payload),
    );
    assert.equal(response.status, 202);
    const id = String((await response.json()).event_id);
    await eventually(async () => (await gateway.store.getEvent(id))?.status === "delivered", {
      what: `${id} delivered`,
    });
    ids.push(id);
  }
  assert.deepEqual(llm.requests.map(turnsCarried), [0, 1, 2, 2], "the fourth run's cut");

  const shown = [];
  for (const id of ids) {
    const ctx = fakeContext(env);
    assert.equal(await webhookShow.run([id, "--json"], ctx), 0);
    shown.push(JSON.parse(ctx.output()).session);
  }
  assert.deepEqual(shown.map((session) => session.turns_given), [0, 1, 2, 2]);
  assert.equal(shown[3].turns_held_before, 3);
  assert.equal(shown[3].key, "Codertocat/Hello-World#7");

  const tokenPath = dashboardTokenPath(config.paths.stateDb);
  const code = await makeLoginCode(await ensureToken(tokenPath), Date.now());
  const login = await fetch(`${gateway.dashboardUrl}/login?code=${code}`, {
    redirect: "manual",
  });
  await login.body?.cancel();
  const cookie = login.headers.get("set-cookie")!.split(";")[0];
  const page = await fetch(`${gateway.dashboardUrl}/events/${ids[3]}`, { headers: { cookie } });
  assert.equal(page.status, 200);
  assert.match(
    await page.text(),
    /<dd id="turns-given">its run was given 2 earlier turns \(of 3 held before it: the older did not fit\), within 50 tokens<\/dd>/,
  );
});
