/**
 * End to end on PostgreSQL (docs/scaling.md): the real `main.ts gateway run` with
 * `state.backend: postgres`, a throwaway server (tests/fakes/postgres.ts), loopback servers
 * playing Telegram and an OpenAI-compatible endpoint, and GitHub payloads signed by
 * `@octokit/webhooks-methods`. One gateway does it all; then two processes on one database split
 * the roles (`--no-worker`, `--no-ingest`).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { startFakeTelegram } from "../fakes/chat_servers.ts";
import { githubExample } from "../fakes/github_examples.ts";
import { type FakeLlmRequest, startFakeLlm } from "../fakes/llm_server.ts";
import { startPostgres, type ThrowawayPostgres } from "../fakes/postgres.ts";
import {
  enabledConfig,
  eventually,
  signedGitHub,
  startGatewayProcess,
  tempHome,
} from "../_helpers.ts";
import { subscribeCi, webhookEvents } from "./_cli.ts";

const SECRET = "postgres-e2e-secret-0123";
const CHAT = "4242";
const ISSUE = githubExample("issues", "opened");

let started: Promise<ThrowawayPostgres> | undefined;
/** The file's server, started by the first test. */
const server = () => started ??= startPostgres();

/** One row of `agent webhook events --json`. */
interface EventRow {
  id: string;
  delivery_id: string;
  status: string;
  attempts: number;
}

/** What the LLM echoes: the prompt, which holds the delivery id. */
function echo(request: FakeLlmRequest): string {
  return `echo: ${request.messages.at(-1)?.content ?? ""}`;
}

/**
 * A home on a fresh schema of the file's server (`state.backend: postgres`, `DATABASE_URL` in
 * the environment), a fake Telegram and a fake LLM, and the subscription `ci` (issues, prompt
 * `Delivery {__delivery_id__}`, to Telegram chat 4242), made by the CLI in the database.
 */
async function stack() {
  const schema = await (await server()).createSchema();
  const h = await tempHome({ config: `${enabledConfig(0)}state:\n  backend: postgres\n` });
  const telegram = startFakeTelegram();
  const llm = await startFakeLlm({ answer: echo });
  const env = {
    AGENT_HOME: h.home,
    DATABASE_URL: schema.url,
    // Two processes on one home each serve a dashboard: each on a port of its own.
    DASHBOARD_PORT: "0",
    ...telegram.env,
    ...llm.env,
  };
  const dispose = async () => {
    await llm.close();
    await telegram.close();
    await h[Symbol.asyncDispose]();
    await schema.drop();
  };
  await subscribeCi(env, { secret: SECRET, chat: CHAT, dispose });
  return { home: h.home, env, telegram, llm, [Symbol.asyncDispose]: dispose };
}

/** POSTs the `issues.opened` example to `ci`, signed, with delivery id `delivery`. */
async function postIssue(url: string, delivery: string): Promise<Response> {
  return await fetch(`${url}/webhooks/ci`, await signedGitHub(SECRET, ISSUE, { delivery }));
}

/** `agent webhook events --json`, as a user on the home reads them. */
async function events(env: Record<string, string>): Promise<EventRow[]> {
  return await webhookEvents<EventRow>(env);
}

/** Whether the home has a SQLite state file: on PostgreSQL it must not. */
async function sqliteFileExists(home: string): Promise<boolean> {
  return await Deno.stat(join(home, "state", "gateway.db")).then(() => true, () => false);
}

Deno.test("a gateway on state.backend: postgres takes a signed event, runs it to Telegram, and webhook events lists it from the database", async () => {
  await using s = await stack();
  await using gateway = await startGatewayProcess(s.env);
  assert.match(gateway.output(), /\n {2}state: {4}PostgreSQL \(DATABASE_URL\)\n/);
  const response = await postIssue(gateway.url, "pg-1");
  assert.equal(response.status, 202, await response.text());
  await eventually(() => s.telegram.messages.length === 1, { what: "the Telegram message" });
  assert.equal(s.telegram.messages[0].to, CHAT);
  assert.match(s.telegram.messages[0].text, /^echo: Delivery pg-1$/);
  let rows: EventRow[] = [];
  await eventually(async () => {
    rows = await events(s.env);
    return rows.length === 1 && rows[0].status === "delivered";
  }, { what: "the event delivered in the database" });
  assert.deepEqual(rows.map((row) => [row.delivery_id, row.attempts]), [["pg-1", 1]]);
  const duplicate = await postIssue(gateway.url, "pg-1");
  assert.equal(duplicate.status, 200, "the delivery id is remembered in the database");
  assert.equal((await duplicate.json()).status, "duplicate");
  assert.equal(await sqliteFileExists(s.home), false, "nothing was kept in SQLite");
  assert.equal(gateway.output().includes(s.env.DATABASE_URL), false, "the URL is never printed");
  assert.equal(await gateway.stop("SIGTERM"), 0);
  assert.equal(s.telegram.messages.length, 1);
});

Deno.test("--no-worker and --no-ingest split the roles between two processes on one database", async () => {
  await using s = await stack();
  await using ingest = await startGatewayProcess(s.env, ["--no-worker"]);
  for (const delivery of ["split-1", "split-2"]) {
    const response = await postIssue(ingest.url, delivery);
    assert.equal(response.status, 202, await response.text());
  }
  const queued = await events(s.env);
  assert.deepEqual(queued.map((row) => row.status), ["queued", "queued"], "nothing runs them");
  assert.equal(s.llm.requests.length, 0);

  await using worker = await startGatewayProcess(s.env, ["--no-ingest"]);
  assert.equal(worker.url, "");
  assert.match(worker.output(), /Gateway running the worker only \(--no-ingest\)/);
  await eventually(() => s.telegram.messages.length === 2, { what: "both messages" });
  assert.deepEqual(
    s.telegram.messages.map((message) => message.text).sort(),
    ["echo: Delivery split-1", "echo: Delivery split-2"],
  );
  await eventually(async () => (await events(s.env)).every((row) => row.status === "delivered"), {
    what: "both events delivered",
  });
  // A third event reaches the worker through the database alone.
  const third = await postIssue(ingest.url, "split-3");
  assert.equal(third.status, 202, await third.text());
  await eventually(() => s.telegram.messages.length === 3, { what: "the third message" });
  assert.equal(await ingest.stop("SIGTERM"), 0);
  assert.equal(await worker.stop("SIGTERM"), 0);
  assert.equal(s.telegram.messages.length, 3, "each delivered once");
});

Deno.test("postgres e2e: the throwaway server stops", async () => {
  await (await started)?.stop();
});
