/**
 * End to end: a coalesced burst (docs/subscriptions.md#coalescing) survives kill -9. The real
 * `main.ts gateway run` is killed during the window, then again during the run that answers
 * it, and restarted, with loopback servers playing Telegram and an OpenAI-compatible endpoint,
 * and GitHub payloads signed by `@octokit/webhooks-methods`: every event is answered, in one
 * run, by one message.
 *
 * @module
 */
import assert from "node:assert/strict";
import { startFakeTelegram } from "../fakes/chat_servers.ts";
import { githubExample } from "../fakes/github_examples.ts";
import { startFakeLlm } from "../fakes/llm_server.ts";
import {
  enabledConfig,
  eventually,
  runCli,
  signedGitHub,
  startGatewayProcess,
  tempHome,
} from "../_helpers.ts";
import { webhookEvents } from "./_cli.ts";

const SECRET = "coalesce-crash-secret";
const ISSUE = githubExample("issues", "opened");

/** One row of `agent webhook events --json`. */
interface EventRow {
  id: string;
  delivery_id: string;
  status: string;
  attempts: number;
  coalesced_into: string | null;
}

/** `agent webhook events --json`, oldest first. */
async function events(env: Record<string, string>): Promise<EventRow[]> {
  return (await webhookEvents<EventRow>(env)).reverse();
}

Deno.test("kill -9 during a window, then during its run: all three events answered by one run, once", async () => {
  await using h = await tempHome({ config: enabledConfig(0) });
  await using telegram = startFakeTelegram();
  let hang = true;
  const llm = await startFakeLlm({ answer: () => hang ? { hang: true } : "Three at once." });
  await using _llm = { [Symbol.asyncDispose]: () => llm.close() };
  const env = { AGENT_HOME: h.home, ...telegram.env, ...llm.env };
  const sub = await runCli([
    "webhook",
    "subscribe",
    "gh",
    "--prompt",
    "Delivery {__delivery_id__}",
    "--deliver",
    "telegram:4242",
    "--secret",
    SECRET,
    "--coalesce",
    "4",
    "--coalesce-key",
    "{repository.full_name}#{issue.number}",
  ], env);
  assert.equal(sub.code, 0, sub.stderr);

  const first = await startGatewayProcess(env);
  for (const delivery of ["burst-1", "burst-2", "burst-3"]) {
    const response = await fetch(
      `${first.url}/webhooks/gh`,
      await signedGitHub(SECRET, ISSUE, { event: "issues", delivery }),
    );
    assert.equal(response.status, 202, await response.text());
  }
  assert.equal(llm.requests.length, 0, "still within the 4 s window");
  assert.notEqual(await first.stop("SIGKILL"), 0);
  assert.deepEqual((await events(env)).map((row) => row.status), ["queued", "queued", "queued"]);

  // The window ends in the database: the restarted gateway runs the burst once it is over.
  const second = await startGatewayProcess(env);
  await eventually(() => llm.requests.length === 1, { what: "the burst's run", timeoutMs: 15_000 });
  assert.notEqual(await second.stop("SIGKILL"), 0);

  hang = false;
  await using third = await startGatewayProcess(env);
  const rows = await eventually(async () => {
    const rows = await events(env);
    return rows.every((row) => row.status === "delivered") ? rows : undefined;
  }, { what: "the burst delivered", timeoutMs: 15_000 });
  assert.deepEqual(telegram.messages.map((message) => message.text), ["Three at once."]);
  assert.equal(llm.requests.length, 2, "the run cut off by the kill, then its second attempt");
  for (const request of llm.requests) {
    const prompt = request.messages.at(-1)!.content;
    assert.match(prompt, /^3 events arrived together/);
    assert.deepEqual(prompt.match(/Delivery burst-\d/g), [
      "Delivery burst-1",
      "Delivery burst-2",
      "Delivery burst-3",
    ]);
  }
  const [run, ...folded] = rows;
  assert.equal(run.delivery_id, "burst-1");
  assert.equal(run.attempts, 2, "interrupted once, then delivered");
  assert.equal(run.coalesced_into, null);
  assert.deepEqual(folded.map((row) => [row.coalesced_into, row.attempts]), [
    [run.id, 0],
    [run.id, 0],
  ]);
  const shown = await runCli(["webhook", "show", run.id], env);
  assert.match(shown.stdout, /Coalesced\n {2}key ".+": this event's run answered 2 more/);
  const shownFolded = await runCli(["webhook", "show", folded[0].id], env);
  assert.match(shownFolded.stdout, new RegExp(`answered by the agent run of ${run.id}`));
  assert.equal(await third.stop("SIGTERM"), 0);
});
