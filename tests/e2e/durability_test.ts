/**
 * End to end: an event answered 202 is never lost and never delivered twice. The real
 * `main.ts gateway run` is killed (SIGKILL), stopped (SIGTERM), denied its database and
 * restarted, with loopback servers playing Telegram and an OpenAI-compatible endpoint, and real
 * GitHub payloads signed by `@octokit/webhooks-methods`.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import {
  type FakePlatform,
  type PlannedFailure,
  startFakeTelegram,
} from "../fakes/chat_servers.ts";
import { githubExample } from "../fakes/github_examples.ts";
import { type FakeLlmAnswer, type FakeLlmRequest, startFakeLlm } from "../fakes/llm_server.ts";
import {
  enabledConfig,
  eventually,
  processExited,
  runCli,
  signedGitHub,
  startGatewayProcess,
  tempHome,
} from "../_helpers.ts";
import { subscribeCi, webhookEvents } from "./_cli.ts";

const SECRET = "durability-secret-0123";
const CHAT = "4242";
const ISSUE = githubExample("issues", "opened");

/** One row of `agent webhook events --json`. */
interface EventRow {
  id: string;
  delivery_id: string;
  status: string;
  attempts: number;
  last_error: string | null;
  attempts_detail: {
    attempt: number;
    step: string;
    started_at: string;
    finished_at: string | null;
    error: string | null;
  }[];
}

/** A home whose config.yaml enables the platform and sets the `agent:` section. */
function configWith(agent: string): string {
  return `${enabledConfig(0)}agent:\n${agent}`;
}

/** What the LLM echoes: the prompt, which holds the delivery id. */
function echo(request: FakeLlmRequest): string {
  return `echo: ${request.messages.at(-1)?.content ?? ""}`;
}

/**
 * A temporary home, a fake Telegram and a fake LLM, wired by environment variables, and the
 * subscription `ci` (issues, prompt `Delivery {__delivery_id__}`, to Telegram chat 4242).
 */
async function stack(
  config: string,
  answer: (request: FakeLlmRequest, index: number) => FakeLlmAnswer | Promise<FakeLlmAnswer>,
) {
  const h = await tempHome({ config });
  const telegram = startFakeTelegram();
  const llm = await startFakeLlm({ answer });
  const dispose = async () => {
    await llm.close();
    await telegram.close();
    await h[Symbol.asyncDispose]();
  };
  const env = {
    AGENT_HOME: h.home,
    ...telegram.env,
    ...llm.env,
  };
  await subscribeCi(env, { secret: SECRET, chat: CHAT, dispose });
  return { home: h.home, env, telegram, llm, [Symbol.asyncDispose]: dispose };
}

/** POSTs the `issues.opened` example to `ci`, signed, with delivery id `delivery`. */
async function postIssue(url: string, delivery: string): Promise<Response> {
  return await fetch(`${url}/webhooks/ci`, await signedGitHub(SECRET, ISSUE, { delivery }));
}

/** `agent webhook events --json` for every event. */
async function events(env: Record<string, string>): Promise<EventRow[]> {
  return await webhookEvents<EventRow>(env, ["--limit", "1000"]);
}

async function allDelivered(env: Record<string, string>, count: number): Promise<EventRow[]> {
  let rows: EventRow[] = [];
  await eventually(async () => {
    rows = await events(env);
    return rows.length === count && rows.every((row) => row.status === "delivered");
  }, { what: `${count} delivered events`, timeoutMs: 15_000 });
  return rows;
}

/** Telegram messages per delivery id (each answer echoes `Delivery <id>`). */
function messagesPerDelivery(telegram: FakePlatform): Map<string, number> {
  const counts = new Map<string, number>();
  for (const message of telegram.messages) {
    assert.equal(message.to, CHAT);
    const id = message.text.match(/Delivery (\S+)/)?.[1] ?? "?";
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

/** Makes the fake answer `failure` once, to the request after its `count`-th accepted message. */
function failAfterMessages(fake: FakePlatform, count: number, failure: PlannedFailure): void {
  const push = fake.messages.push.bind(fake.messages);
  fake.messages.push = (...items) => {
    const length = push(...items);
    if (length === count) fake.failNext(1, failure);
    return length;
  };
}

Deno.test("kill -9 with events running and queued loses none and delivers each exactly once", async () => {
  let hang = true;
  await using s = await stack(
    configWith("  max_concurrency: 2\n  retry: {initial_delay_seconds: 0}\n"),
    (request) => hang ? { hang: true } : echo(request),
  );
  await using first = await startGatewayProcess(s.env);
  const deliveries = Array.from({ length: 20 }, (_, i) => `crash-${i}`);
  for (const delivery of deliveries) {
    const response = await postIssue(first.url, delivery);
    const body = await response.text();
    assert.equal(response.status, 202, body);
  }
  await eventually(() => s.llm.requests.length === 2, { what: "two agent runs hanging" });
  assert.notEqual(await first.stop("SIGKILL"), 0);

  const before = await events(s.env);
  const statuses = before.map((row) => row.status).sort();
  assert.deepEqual(statuses, [...Array(2).fill("running"), ...Array(18).fill("queued")].sort());
  assert.equal(s.telegram.messages.length, 0);

  hang = false;
  await using second = await startGatewayProcess(s.env);
  const after = await allDelivered(s.env, 20);
  assert.deepEqual(
    [...messagesPerDelivery(s.telegram)].sort(),
    deliveries.map((delivery) => [delivery, 1]).sort(),
  );
  const interrupted = after.filter((row) => row.attempts === 2);
  assert.equal(interrupted.length, 2, "the two running events resumed as a second attempt");
  for (const row of interrupted) assert.match(row.attempts_detail[0].error ?? "", /interrupted/);
  assert.equal(after.filter((row) => row.attempts === 1).length, 18);
  assert.equal(await second.stop("SIGTERM"), 0);
});

Deno.test("kill -9 in the middle of a direct message of six parts: the sender's retry sends only the rest", async () => {
  // A Telegram that takes parts 1 to 3 and holds the answer to part 4 until the gateway dies.
  const received: string[] = [];
  const fourthArrived = Promise.withResolvers<void>();
  const gatewayKilled = Promise.withResolvers<void>();
  await using telegram = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => {
      const { text } = await request.json();
      received.push(String(text).slice(0, 5));
      if (received.length === 4) {
        fourthArrived.resolve();
        await gatewayKilled.promise; // not answered before the gateway is killed
      }
      return Response.json({ ok: true, result: { message_id: received.length } });
    },
  );
  await using s = await stack(configWith(""), echo);
  const env = { ...s.env, TELEGRAM_API_URL: `http://127.0.0.1:${telegram.addr.port}` };
  const sub = await runCli([
    "webhook",
    "subscribe",
    "direct",
    "--prompt",
    "{issue.body}",
    "--deliver",
    "telegram",
    "--deliver-chat-id",
    CHAT,
    "--deliver-only",
    "--secret",
    SECRET,
  ], env);
  assert.equal(sub.code, 0, sub.stderr);
  const body = Array.from({ length: 6 }, (_, i) => `Part ${i + 1}. ${"word ".repeat(700)}`)
    .join("\n\n");
  const payload = { ...ISSUE, issue: { ...(ISSUE.issue as object), body } };
  const send = async (url: string) =>
    await fetch(`${url}/webhooks/direct`, await signedGitHub(SECRET, payload, { delivery: "six" }));

  await using first = await startGatewayProcess(env);
  const cut = send(first.url).then(() => "answered", () => "connection lost");
  await fourthArrived.promise;
  assert.notEqual(await first.stop("SIGKILL"), 0);
  gatewayKilled.resolve();
  assert.equal(await cut, "connection lost");

  await using second = await startGatewayProcess(env);
  const retry = await send(second.url); // the sender's retry of the same delivery
  assert.equal(retry.status, 200, await retry.clone().text());
  assert.equal((await retry.json()).status, "delivered");
  // Part 4 went out, but its answer never came back: it is the one part sent twice.
  assert.deepEqual(received, ["(1/6)", "(2/6)", "(3/6)", "(4/6)", "(4/6)", "(5/6)", "(6/6)"]);
  const rows = (await events(env)).filter((row) => row.delivery_id === "six");
  assert.deepEqual(rows.map((row) => row.status).sort(), ["delivered", "failed"]);
  const cutOff = rows.find((row) => row.status === "failed")!;
  assert.match(cutOff.last_error ?? "", /interrupted: the gateway stopped while sending/);
  assert.equal(await second.stop("SIGTERM"), 0);
});

Deno.test("a part already sent to Telegram is not sent again when a later part fails", async () => {
  const answer = `First paragraph.\n${"alpha ".repeat(600)}\n\nSecond paragraph.\n${
    "omega ".repeat(600)
  }`;
  await using s = await stack(
    configWith("  max_concurrency: 1\n  retry: {initial_delay_seconds: 0}\n"),
    () => answer,
  );
  failAfterMessages(s.telegram, 1, { status: 500 });
  await using gateway = await startGatewayProcess(s.env);
  const response = await postIssue(gateway.url, "split-1");
  assert.equal(response.status, 202);
  await response.body?.cancel();

  const [row] = await allDelivered(s.env, 1);
  const texts = s.telegram.messages.map((message) => message.text);
  assert.equal(texts.length, 2);
  assert.match(texts[0], /^\(1\/2\) First paragraph\./);
  assert.match(texts[1], /^\(2\/2\) Second paragraph\./);
  assert.equal(s.telegram.requests, 3, "part 1, part 2 refused with 500, part 2 again");
  assert.equal(s.llm.requests.length, 1, "the saved answer is delivered, not asked again");
  assert.equal(row.attempts, 2);
  assert.equal(row.attempts_detail[0].step, "delivery");
  assert.match(row.attempts_detail[0].error ?? "", /HTTP 500/);
});

Deno.test("an LLM 429 with Retry-After: 1 is retried after a second and ends delivered", async () => {
  await using s = await stack(
    configWith("  retry: {initial_delay_seconds: 0, max_attempts: 5}\n"),
    (request, index) => index < 2 ? { status: 429, retryAfter: "1" } : echo(request),
  );
  await using gateway = await startGatewayProcess(s.env);
  const response = await postIssue(gateway.url, "limited-1");
  assert.equal(response.status, 202);
  await response.body?.cancel();

  const [row] = await allDelivered(s.env, 1);
  assert.equal(row.attempts, 3);
  assert.equal(row.last_error, null, "a delivered event has no current error");
  const [one, two, three] = row.attempts_detail;
  assert.match(one.error ?? "", /429/);
  assert.match(two.error ?? "", /429/);
  assert.equal(three.error, null);
  const waited = (before: typeof one, after: typeof one) =>
    Date.parse(after.started_at) - Date.parse(before.finished_at!);
  assert.ok(waited(one, two) >= 1000, "Retry-After: 1 waited out");
  assert.ok(waited(two, three) >= 1000, "Retry-After: 1 waited out");
  assert.deepEqual([...messagesPerDelivery(s.telegram)], [["limited-1", 1]]);
});

Deno.test("an LLM that always answers 500 dead-letters the event after max_attempts", async () => {
  await using s = await stack(
    configWith("  retry: {initial_delay_seconds: 0, max_attempts: 2}\n"),
    () => ({ status: 500, message: "model exploded" }),
  );
  await using gateway = await startGatewayProcess(s.env);
  const response = await postIssue(gateway.url, "broken-1");
  assert.equal(response.status, 202);
  await response.body?.cancel();

  const row = await eventually(
    async () => (await events(s.env)).find((r) => r.status === "failed"),
    {
      what: "a failed event",
    },
  );
  assert.equal(row.attempts, 2);
  assert.match(row.last_error ?? "", /500.*model exploded/);
  assert.deepEqual(row.attempts_detail.map((a) => [a.attempt, a.step]), [[1, "agent"], [
    2,
    "agent",
  ]]);
  assert.equal(s.llm.requests.length, 2);
  assert.equal(s.telegram.requests, 0);
});

Deno.test("SIGTERM lets the running event finish and keeps the queued ones for the next start", async () => {
  const release = Promise.withResolvers<void>();
  await using s = await stack(
    configWith("  max_concurrency: 1\n  retry: {initial_delay_seconds: 0}\n"),
    async (request) => {
      await release.promise;
      return echo(request);
    },
  );
  await using first = await startGatewayProcess(s.env);
  for (const delivery of ["term-0", "term-1", "term-2"]) {
    const response = await postIssue(first.url, delivery);
    assert.equal(response.status, 202);
    await response.body?.cancel();
  }
  await eventually(() => s.llm.requests.length === 1, { what: "one agent run in progress" });
  // A sender stalled in the middle of a body keeps the server draining until it goes.
  const stalled = await Deno.connect({
    hostname: "127.0.0.1",
    port: Number(new URL(first.url).port),
  });
  await stalled.write(
    new TextEncoder().encode(
      "POST /webhooks/ci HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n{",
    ),
  );
  const exited = first.stop("SIGTERM");
  await eventually(() => first.output().includes("Stopping"), { what: "the gateway stopping" });
  release.resolve();
  await eventually(() => s.telegram.messages.length === 1, { what: "the running event's message" });
  // The slot it frees must not start a queued event while the server drains.
  await new Promise((resolve) => setTimeout(resolve, 500));
  assert.equal(s.llm.requests.length, 1, "no agent run started after SIGTERM");
  stalled.close();
  assert.equal(await exited, 0, first.output());
  assert.match(first.output(), /Gateway stopped/);

  const stopped = await events(s.env);
  assert.deepEqual(stopped.map((row) => row.status).sort(), ["delivered", "queued", "queued"]);
  assert.equal(s.telegram.messages.length, 1);

  await using second = await startGatewayProcess(s.env);
  await allDelivered(s.env, 3);
  assert.deepEqual(
    [...messagesPerDelivery(s.telegram)].sort(),
    [["term-0", 1], ["term-1", 1], ["term-2", 1]],
  );
  assert.equal(await second.stop(), 0);
});

/** A config whose agent is `sh -c <script>` (`provider: command`). */
function commandAgent(script: string): string {
  return configWith(`  provider: command\n  command: ${JSON.stringify(["sh", "-c", script])}\n`);
}

/** A command agent that starts a child, writes its pid to `$AGENT_HOME/child.pid` and waits. */
const SLOW_AGENT = 'sleep 60 & echo $! > "$AGENT_HOME/child.pid"; wait';

/**
 * POSTs an issue (202), then waits until the agent has started its child.
 * @returns the child's pid
 */
async function startSlowAgentRun(url: string, home: string, delivery: string): Promise<number> {
  const response = await postIssue(url, delivery);
  assert.equal(response.status, 202);
  await response.body?.cancel();
  return await eventually(
    async () => Number(await Deno.readTextFile(join(home, "child.pid")).catch(() => "")) || null,
    { what: "the agent's child to start" },
  );
}

Deno.test("SIGTERM kills a command agent still running at the deadline; the next start runs the event again", async () => {
  // The first run is the slow agent; later runs answer at once. One attempt in all: the one
  // the stop cut off does not count.
  const script = 'if [ -e "$AGENT_HOME/ran" ]; then echo "answered after restart"; else ' +
    `touch "$AGENT_HOME/ran"; ${SLOW_AGENT}; fi`;
  await using s = await stack(
    configWith(
      `  provider: command\n  command: ${JSON.stringify(["sh", "-c", script])}\n` +
        "  retry: {max_attempts: 1}\n",
    ),
    echo,
  );
  await using first = await startGatewayProcess(s.env);
  const childPid = await startSlowAgentRun(first.url, s.home, "slow-agent");
  const started = performance.now();
  assert.equal(await first.stop("SIGTERM"), 0, first.output());
  const tookMs = performance.now() - started;
  assert.ok(tookMs < 14_000, `the stop took ${Math.round(tookMs)} ms`);
  assert.match(first.output(), /agent run stopped by shutdown/);
  assert.ok(await processExited(childPid), `the agent's child ${childPid} outlived the gateway`);
  assert.deepEqual(
    (await events(s.env)).map((row) => row.status),
    ["queued"],
    "requeued by the stop",
  );
  assert.equal(s.telegram.messages.length, 0);

  await using second = await startGatewayProcess(s.env);
  await allDelivered(s.env, 1);
  assert.deepEqual(s.telegram.messages.map((message) => message.text), [
    "answered after restart",
  ]);
  assert.equal(await second.stop(), 0);
});

Deno.test("kill -9 during a command agent's run: the next start kills what the agent left running, then runs the event again", async () => {
  // The first run is the slow agent; later runs answer at once.
  const script = 'if [ -e "$AGENT_HOME/ran" ]; then echo "answered after restart"; else ' +
    `touch "$AGENT_HOME/ran"; ${SLOW_AGENT}; fi`;
  await using s = await stack(commandAgent(script), echo);
  await using first = await startGatewayProcess(s.env);
  const childPid = await startSlowAgentRun(first.url, s.home, "orphan");
  assert.notEqual(await first.stop("SIGKILL"), 0);
  assert.equal(await processExited(childPid), false, "the agent outlives a killed gateway");

  await using second = await startGatewayProcess(s.env);
  assert.ok(await processExited(childPid), `the agent's child ${childPid} was left running`);
  await allDelivered(s.env, 1);
  assert.deepEqual(s.telegram.messages.map((message) => message.text), [
    "answered after restart",
  ]);
  assert.match(second.output(), /killed agent commands a gateway that died left running/);
  assert.deepEqual([...Deno.readDirSync(join(s.home, "state", "agents"))], [], "no note left");
  assert.equal(await second.stop(), 0);
});

Deno.test("a second SIGTERM stops a running command agent at once", async () => {
  await using s = await stack(commandAgent(SLOW_AGENT), echo);
  await using gateway = await startGatewayProcess(s.env);
  const childPid = await startSlowAgentRun(gateway.url, s.home, "hurried");
  const started = performance.now();
  const exited = gateway.stop("SIGTERM");
  await eventually(() => gateway.output().includes("Ctrl-C again"), { what: "the first stop" });
  Deno.kill(gateway.child.pid, "SIGTERM");
  assert.equal(await exited, 0, gateway.output());
  const tookMs = performance.now() - started;
  assert.ok(tookMs < 5_000, `the stop took ${Math.round(tookMs)} ms, not the 10 s deadline`);
  assert.match(gateway.output(), /Stopping now/);
  assert.ok(await processExited(childPid), `the agent's child ${childPid} outlived the gateway`);
  assert.deepEqual(
    (await events(s.env)).map((row) => row.status),
    ["queued"],
    "requeued by the stop",
  );
});

Deno.test("a locked state database answers 503 with Retry-After and the retry is accepted", async () => {
  await using s = await stack(configWith("  retry: {initial_delay_seconds: 0}\n"), echo);
  await using gateway = await startGatewayProcess(s.env);
  const warmup = await postIssue(gateway.url, "before-lock");
  assert.equal(warmup.status, 202);
  await warmup.body?.cancel();
  await allDelivered(s.env, 1);

  // Another connection holds the write lock past the gateway's busy timeout (5 s).
  const db = new DatabaseSync(join(s.home, "state", "gateway.db"));
  db.exec("BEGIN IMMEDIATE");
  let refused: Response;
  try {
    refused = await postIssue(gateway.url, "during-lock");
  } finally {
    db.exec("ROLLBACK");
    db.close();
  }
  assert.equal(refused.status, 503);
  assert.ok(Number(refused.headers.get("retry-after")) > 0);
  assert.deepEqual(await refused.json(), { error: "event store unavailable, retry later" });

  // A sender waits its Retry-After (5 s); the gateway refuses at once only for the busy
  // timeout (1 s) after a refused write, so a second is enough here.
  await new Promise((resolve) => setTimeout(resolve, 1_100));
  const retried = await postIssue(gateway.url, "during-lock");
  assert.equal(retried.status, 202, "the 503 left the delivery id unclaimed");
  await retried.body?.cancel();
  const rows = await allDelivered(s.env, 2);
  assert.deepEqual(rows.map((row) => row.delivery_id).sort(), ["before-lock", "during-lock"]);
  assert.deepEqual(
    [...messagesPerDelivery(s.telegram)].sort(),
    [["before-lock", 1], ["during-lock", 1]],
  );
});

Deno.test("a gateway started while another process holds the database's write lock serves, and resumes the events a crash left running once the lock goes", async () => {
  let hang = true;
  await using s = await stack(
    configWith("  max_concurrency: 2\n  retry: {initial_delay_seconds: 0}\n"),
    (request) => hang ? { hang: true } : echo(request),
  );
  await using first = await startGatewayProcess(s.env);
  for (const delivery of ["left-0", "left-1", "left-2"]) {
    const response = await postIssue(first.url, delivery);
    assert.equal(response.status, 202, await response.text());
  }
  await eventually(() => s.llm.requests.length === 2, { what: "two agent runs hanging" });
  assert.notEqual(await first.stop("SIGKILL"), 0);
  hang = false;

  // The start must requeue the two running events, and cannot while the lock is held: it
  // exited 1 ("database is locked"), and under systemd a lock held a few starts long left the
  // unit failed.
  const db = new DatabaseSync(join(s.home, "state", "gateway.db"));
  db.exec("BEGIN IMMEDIATE");
  let refused: Response;
  let second: Awaited<ReturnType<typeof startGatewayProcess>>;
  try {
    second = await startGatewayProcess(s.env);
    refused = await postIssue(second.url, "during-lock");
  } finally {
    db.exec("ROLLBACK");
    db.close();
  }
  await using _second = second;
  assert.equal(refused.status, 503);
  await refused.body?.cancel();
  const rows = await allDelivered(s.env, 3);
  assert.deepEqual(rows.map((row) => row.attempts).sort(), [1, 2, 2]);
  assert.deepEqual(
    [...messagesPerDelivery(s.telegram)].sort(),
    [["left-0", 1], ["left-1", 1], ["left-2", 1]],
  );
  assert.match(second.output(), /cannot resume interrupted events yet/);
});
