/**
 * End to end: the real `main.ts gateway run` on a free port in a fresh home, the real CLI,
 * real GitHub payloads signed by `@octokit/webhooks-methods`, and loopback servers playing the
 * Telegram Bot API and an OpenAI-compatible endpoint.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { startFakeTelegram } from "../fakes/chat_servers.ts";
import { githubExample } from "../fakes/github_examples.ts";
import { startFakeLlm } from "../fakes/llm_server.ts";
import { runCommand } from "../../commands/mod.ts";
import { SCHEME_NAMES } from "../../lib/signatures/mod.ts";
import {
  enabledConfig,
  eventually,
  fakeContext,
  type GatewayProcess,
  runCli,
  signedGitHub,
  signedIssue,
  startGatewayProcess,
  tempHome,
} from "../_helpers.ts";

/** Subscribes `gh` (answers to the log) with the CLI and posts it one signed issue event: 202. */
async function subscribeAndPostIssue(
  gateway: GatewayProcess,
  cliEnv: Record<string, string>,
  delivery: string,
): Promise<void> {
  const sub = await runCli(["webhook", "subscribe", "gh", "--deliver", "log"], cliEnv);
  assert.equal(sub.code, 0, sub.stderr);
  const secret = sub.stdout.match(/Secret:\s+(\S+)/)![1];
  const sent = await postGitHub(`${gateway.url}/webhooks/gh`, githubExample("issues"), {
    event: "issues",
    secret,
    delivery,
  });
  assert.equal(sent.status, 202);
}

/** The exit code of a gateway process that is to exit on its own within `timeoutMs`. */
async function exitCodeWithin(gateway: GatewayProcess, timeoutMs: number): Promise<number> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`no exit within ${timeoutMs} ms:\n${gateway.output()}`)),
      timeoutMs,
    );
  });
  try {
    return (await Promise.race([gateway.child.status, timeout])).code;
  } finally {
    clearTimeout(timer);
  }
}

async function postGitHub(
  url: string,
  payload: unknown,
  options: { event: string; secret: string; delivery?: string },
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(url, await signedGitHub(options.secret, payload, options));
  return { status: response.status, body: await response.json() };
}

Deno.test("GitHub events flow through the real gateway to a Telegram chat, in both modes", async () => {
  await using h = await tempHome();
  await using telegram = startFakeTelegram();
  const llm = await startFakeLlm({
    answer: (request) => `Summary: ${request.messages.at(-1)?.content.slice(0, 60)}`,
  });
  await using _llm = { [Symbol.asyncDispose]: () => llm.close() };
  const env = {
    AGENT_HOME: h.home,
    ...telegram.env,
    ...llm.env,
  };

  await using gateway = await startGatewayProcess(env);
  assert.match(gateway.output(), /Created .*config\.yaml/);
  const cliEnv = { ...env, WEBHOOK_PORT: String(new URL(gateway.url).port) };

  const agentSub = await runCli([
    "webhook",
    "subscribe",
    "gh-agent",
    "--events",
    "issues,pull_request,push",
    "--prompt",
    "Event {__event__} on {repository.full_name}: {issue.title}{pull_request.title}",
    "--deliver",
    "telegram",
    "--deliver-chat-id",
    "4242",
  ], cliEnv);
  assert.equal(agentSub.code, 0, agentSub.stderr);
  const secret = agentSub.stdout.match(/Secret:\s+(\S+)/)![1];
  assert.equal(secret.length, 43);

  const directSub = await runCli([
    "webhook",
    "subscribe",
    "gh-direct",
    "--deliver-only",
    "--deliver",
    "telegram",
    "--deliver-chat-id",
    "777",
    "--secret",
    "direct-secret-123",
    "--prompt",
    "New issue: {issue.title}",
  ], cliEnv);
  assert.equal(directSub.code, 0, directSub.stderr);

  const hook = (name: string) => `${gateway.url}/webhooks/${name}`;
  const issue = githubExample("issues", "opened");
  const pull = githubExample("pull_request", "opened");
  const push = githubExample("push");

  // Agent mode: three real events, each persisted (202), answered by the LLM, sent to chat 4242.
  for (const [event, payload] of [["issues", issue], ["pull_request", pull], ["push", push]]) {
    const { status, body } = await postGitHub(hook("gh-agent"), payload, {
      event: event as string,
      secret,
    });
    assert.equal(status, 202, JSON.stringify(body));
    assert.equal(body.status, "accepted");
  }
  await eventually(() => telegram.messages.filter((m) => m.to === "4242").length === 3, {
    what: "three agent answers in the Telegram chat",
  });
  const prompts = llm.requests.map((r) => r.messages.at(-1)?.content ?? "");
  const repo = (issue.repository as { full_name: string }).full_name;
  assert.ok(
    prompts.includes(
      `Event issues.opened on ${repo}: ${
        (issue.issue as { title: string }).title
      }{pull_request.title}`,
    ),
  );
  assert.ok(prompts.some((p) => p.startsWith("Event push on")));
  assert.ok(telegram.messages.every((m) => m.text.startsWith("Summary: Event")));

  // Direct mode: the rendered template is the message; 502 on target failure, then retry works.
  const delivery = crypto.randomUUID();
  telegram.failNext(1, { status: 500 });
  const failed = await postGitHub(hook("gh-direct"), issue, {
    event: "issues",
    secret: "direct-secret-123",
    delivery,
  });
  assert.equal(failed.status, 502);
  const retried = await postGitHub(hook("gh-direct"), issue, {
    event: "issues",
    secret: "direct-secret-123",
    delivery,
  });
  assert.equal(retried.status, 200);
  assert.equal(retried.body.status, "delivered");
  const duplicate = await postGitHub(hook("gh-direct"), issue, {
    event: "issues",
    secret: "direct-secret-123",
    delivery,
  });
  assert.equal(duplicate.body.status, "duplicate");
  const direct = telegram.messages.filter((m) => m.to === "777");
  assert.deepEqual(direct.map((m) => m.text), [
    `New issue: ${(issue.issue as { title: string }).title}`,
  ]);

  // Bad input gets its 4xx and the gateway stays up.
  const bad: [RequestInit & { path?: string }, number][] = [
    [{ method: "POST", body: "{}", headers: { "x-hub-signature-256": "sha256=00" } }, 401],
    [{ method: "POST", body: "{}" }, 401],
    [{ method: "PUT", body: "{}" }, 405],
    [{ method: "POST", body: "x".repeat(2_000_000) }, 413],
  ];
  for (const [init, status] of bad) {
    const response = await fetch(hook("gh-agent"), init);
    assert.equal(response.status, status);
    await response.body?.cancel();
  }
  const unknown = await fetch(hook("nope"), { method: "POST", body: "{}" });
  assert.equal(unknown.status, 404);
  await unknown.body?.cancel();
  const health = await fetch(`${gateway.url}/health`);
  assert.deepEqual(await health.json(), { status: "ok", platform: "webhook" });

  // `agent webhook test` signs with the subscription's secret and reaches the running gateway.
  const test = await runCli(["webhook", "test", "gh-agent", "--event", "issues"], cliEnv);
  assert.equal(test.code, 0, test.stdout + test.stderr);
  assert.match(test.stdout, /202 Accepted/);
  const ignored = await runCli(["webhook", "test", "gh-agent", "--event", "deployment"], cliEnv);
  assert.match(ignored.stdout, /"ignored".*\n.*not in the subscription's filter/s);

  // SIGTERM stops it gracefully.
  assert.equal(await gateway.stop("SIGTERM"), 0);
  assert.match(gateway.output(), /Gateway stopped/);

  // One line per decision in the log, secrets never written.
  const log = await Deno.readTextFile(join(h.home, "logs", "gateway.log"));
  for (const decision of ["accepted", "delivered", "rejected", "duplicate", "failed", "ignored"]) {
    assert.match(log, new RegExp(decision), `log has a "${decision}" line`);
  }
  assert.doesNotMatch(log, new RegExp(secret));
  assert.doesNotMatch(log, /direct-secret-123/);
  assert.doesNotMatch(log, new RegExp(telegram.token));
});

Deno.test("the files a gateway creates are readable by its user alone", async () => {
  await using h = await tempHome({ config: enabledConfig(0) });
  await using gateway = await startGatewayProcess({ AGENT_HOME: h.home });
  const subscribed = await runCli(["webhook", "subscribe", "modes"], { AGENT_HOME: h.home });
  assert.equal(subscribed.code, 0, subscribed.stderr);
  await gateway.stop();
  const files = ["state/gateway.db", "state/gateway.lock", "logs/gateway.log"];
  for (const dir of ["state", "logs"]) {
    for await (const entry of Deno.readDir(join(h.home, dir))) files.push(`${dir}/${entry.name}`);
  }
  for (const file of new Set(files)) {
    const mode = (await Deno.stat(join(h.home, file))).mode! & 0o777;
    assert.equal(mode.toString(8), "600", file);
  }
  for (const dir of ["state", "logs"]) {
    assert.equal(((await Deno.stat(join(h.home, dir))).mode! & 0o777).toString(8), "700", dir);
  }
});

Deno.test("a gateway that finds its state database corrupt stops with exit 1 and says how to recover", async () => {
  await using h = await tempHome({ config: enabledConfig(0) });
  await Deno.writeTextFile(
    join(h.home, "webhook_subscriptions.json"),
    JSON.stringify({ gh: { secret: "corrupt-secret-1" } }),
  );
  {
    await using gateway = await startGatewayProcess({ AGENT_HOME: h.home });
    for (let i = 0; i < 50; i++) {
      const response = await fetch(
        `${gateway.url}/webhooks/gh`,
        await signedIssue("corrupt-secret-1"),
      );
      await response.body?.cancel();
      assert.equal(response.status, 202);
    }
    assert.equal(await gateway.stop(), 0);
  }
  // Every page after the first (which holds the schema) overwritten, as a bad disk or a copy
  // made while it was written could leave them.
  const db = join(h.home, "state", "gateway.db");
  const size = (await Deno.stat(db)).size;
  assert.ok(size > 3 * 4096, `${size} bytes`);
  const file = await Deno.open(db, { write: true });
  await file.seek(4096, Deno.SeekMode.Start);
  await file.write(new Uint8Array(size - 4096).fill(0x41));
  file.close();

  await using gateway = await startGatewayProcess({ AGENT_HOME: h.home });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const code = await Promise.race([
    gateway.child.status.then((status) => status.code),
    new Promise<string>((resolve) => timer = setTimeout(() => resolve("still running"), 15_000)),
  ]);
  clearTimeout(timer);
  assert.equal(code, 1, gateway.output());
  assert.match(
    gateway.output(),
    /The state database is corrupt \(database disk image is malformed\)/,
  );
  assert.match(
    gateway.output(),
    /gateway\.db is corrupt: restore a backup, or salvage what it holds/,
  );
  // The commands say so too.
  const events = await runCli(["webhook", "events"], { AGENT_HOME: h.home });
  assert.equal(events.code, 1);
  assert.match(events.stderr, /malformed\. .*gateway\.db is corrupt: restore a backup/);
});

Deno.test("the gateway refuses to start when config.yaml says enabled: false", async () => {
  await using h = await tempHome({ config: "platforms:\n  webhook:\n    enabled: false\n" });
  const result = await runCli(["gateway", "run"], { AGENT_HOME: h.home, WEBHOOK_PORT: "0" });
  assert.equal(result.code, 1);
  assert.match(result.stderr, /Webhook platform is not enabled/);
  assert.match(result.stderr, /agent gateway setup/);
});

Deno.test("gateway run refuses a bad --port as a usage error, and names the address in use", async () => {
  await using h = await tempHome({ config: enabledConfig(0) });
  for (const port of ["abc", "99999", "0x10", "-1"]) {
    const result = await runCli(["gateway", "run", "--port", port], { AGENT_HOME: h.home });
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /--port must be a whole number from 0 to 65535/);
    assert.doesNotMatch(result.stderr, /WEBHOOK_PORT/);
  }
  using taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (taken.addr as Deno.NetAddr).port;
  const result = await runCli(["gateway", "run", "--port", String(port)], { AGENT_HOME: h.home });
  assert.equal(result.code, 1);
  assert.match(
    result.stderr,
    new RegExp(`Cannot listen on 127\\.0\\.0\\.1:${port}: another program already does`),
  );
});

Deno.test("subscribe, list and rotate-secret print the port the running gateway listens on", async () => {
  // config.yaml says 8644; the gateway runs with --port (here any free port).
  await using h = await tempHome({ config: enabledConfig(8644) });
  await using gateway = await startGatewayProcess({ AGENT_HOME: h.home }, ["--port", "0"]);
  const url = `http://localhost:${new URL(gateway.url).port}/webhooks/t7`;
  const env = { AGENT_HOME: h.home };
  const subscribed = await runCli(["webhook", "subscribe", "t7"], env);
  assert.match(subscribed.stdout, new RegExp(`URL: +${url}\n`));
  const [listed] = JSON.parse((await runCli(["webhook", "list", "--json"], env)).stdout);
  assert.equal(listed.webhook_url, url);
  assert.match((await runCli(["webhook", "list"], env)).stdout, new RegExp(`URL: +${url}\n`));
  const rotated = await runCli(["webhook", "rotate-secret", "t7"], env);
  assert.match(rotated.stdout, new RegExp(url));
  // The URL printed answers (401: unsigned), where the configured port has nothing.
  const response = await fetch(url.replace("localhost", "127.0.0.1"), { method: "POST" });
  await response.body?.cancel();
  assert.equal(response.status, 401);
  await gateway.stop();
  const stopped = await runCli(["webhook", "list", "--json"], env);
  assert.equal(JSON.parse(stopped.stdout)[0].webhook_url, "http://localhost:8644/webhooks/t7");
});

Deno.test("a gateway started with a hand-edited record it cannot serve serves the others, and says why", async () => {
  await using h = await tempHome({
    config: enabledConfig(0, "      routes:\n        ci: {secret: ci-secret-123}\n"),
  });
  await Deno.writeTextFile(
    join(h.home, "webhook_subscriptions.json"),
    JSON.stringify({
      good: { secret: "good-secret-1" },
      other: { secret: "other-secret-1", deliver: "telegrm" },
      typed: { secret: "typed-secret-1", events: "issues" },
      // Hidden by the static route `ci`, which is served: not reported as refused.
      ci: { secret: "x-secret-123", deliver: "bogus" },
    }),
  );
  await using gateway = await startGatewayProcess({ AGENT_HOME: h.home });
  const post = async (name: string, secret: string) => {
    const response = await fetch(`${gateway.url}/webhooks/${name}`, await signedIssue(secret));
    return { status: response.status, body: await response.json() };
  };
  assert.deepEqual((await post("good", "good-secret-1")).status, 202);
  assert.deepEqual(await post("other", "other-secret-1"), {
    status: 404,
    body: { error: "unknown subscription: other" },
  });
  await eventually(
    () =>
      /subscription "other" in .*: deliver: unknown target "telegrm"; valid targets: .*; its requests are refused until it is fixed/
        .test(gateway.output()),
    { what: "the log line that says why" },
  );
  assert.deepEqual((await post("typed", "typed-secret-1")).status, 404);
  assert.match(
    gateway.output(),
    /subscription "typed" in .*: events must be a list of strings; its requests are refused until it is fixed/,
  );
  assert.doesNotMatch(gateway.output(), /subscription "ci" in .*refused/);
  assert.equal((await post("ci", "ci-secret-123")).status, 202);
});

Deno.test("the not-enabled message names a WEBHOOK_ENABLED that overrides config.yaml, and where it is", async () => {
  await using h = await tempHome({ config: enabledConfig(0), env: "WEBHOOK_ENABLED=false\n" });
  const fromFile = await runCli(["webhook", "list"], { AGENT_HOME: h.home });
  assert.equal(fromFile.code, 1);
  assert.match(fromFile.stderr, /Webhook platform is not enabled/);
  assert.match(
    fromFile.stderr,
    new RegExp(
      `Now WEBHOOK_ENABLED in ${h.home}/\\.env turns it off, whatever config\\.yaml says: set it to true or remove that line\\.`,
    ),
  );
  await Deno.writeTextFile(join(h.home, ".env"), "");
  const fromShell = await runCli(["gateway", "run"], {
    AGENT_HOME: h.home,
    WEBHOOK_ENABLED: "off",
  });
  assert.equal(fromShell.code, 1);
  assert.match(
    fromShell.stderr,
    /Now WEBHOOK_ENABLED in the process environment turns it off.*: unset it\./,
  );
  // Disabled by config.yaml itself: the three ways alone.
  await Deno.writeTextFile(
    join(h.home, "config.yaml"),
    "platforms:\n  webhook:\n    enabled: false\n",
  );
  const fromYaml = await runCli(["webhook", "list"], { AGENT_HOME: h.home });
  assert.equal(fromYaml.code, 1);
  assert.doesNotMatch(fromYaml.stderr, /Now WEBHOOK_ENABLED/);
});

Deno.test("a new subscription is picked up by the running gateway without a restart", async () => {
  await using h = await tempHome();
  const env = { AGENT_HOME: h.home };
  await using gateway = await startGatewayProcess(env);
  const before = await fetch(`${gateway.url}/webhooks/late`, { method: "POST", body: "{}" });
  assert.equal(before.status, 404);
  await before.body?.cancel();
  const sub = await runCli(["webhook", "subscribe", "late", "--secret", "late-secret-1"], env);
  assert.equal(sub.code, 0, sub.stderr);
  const after = await postGitHub(`${gateway.url}/webhooks/late`, { zen: "x" }, {
    event: "issues",
    secret: "late-secret-1",
  });
  assert.equal(after.status, 202);
  const removed = await runCli(["webhook", "remove", "late"], env);
  assert.equal(removed.code, 0);
  const gone = await fetch(`${gateway.url}/webhooks/late`, { method: "POST", body: "{}" });
  assert.equal(gone.status, 404);
  await gone.body?.cancel();
});

Deno.test("once remove, rotate-secret --grace 0 or a narrower --events returns, the running gateway applies it", async () => {
  await using h = await tempHome();
  const env = { AGENT_HOME: h.home };
  await using gateway = await startGatewayProcess(env);
  // The commands run in this process, so the next request follows their return at once (a
  // subprocess takes longer than the gateway's 100 ms recheck to exit).
  const cli = async (...args: string[]) => {
    const ctx = fakeContext(env);
    assert.equal(await runCommand(args, ctx), 0, ctx.err.join("\n"));
  };
  const post = (secret: string, event = "issues") =>
    postGitHub(`${gateway.url}/webhooks/gh`, { action: "opened" }, { event, secret });
  for (let round = 0; round < 3; round++) {
    await cli("webhook", "subscribe", "gh", "--secret", "old-secret-1");
    // Requests keep the gateway's copy of the subscription file fresh right up to the change.
    assert.equal((await post("old-secret-1")).status, 202);
    await cli("webhook", "remove", "gh");
    assert.equal((await post("old-secret-1")).status, 404, `round ${round}: removed`);
  }
  await cli("webhook", "subscribe", "gh", "--secret", "old-secret-1");
  assert.equal((await post("old-secret-1")).status, 202);
  await cli("webhook", "rotate-secret", "gh", "--grace", "0", "--secret", "new-secret-2");
  assert.equal((await post("old-secret-1")).status, 401);
  assert.equal((await post("new-secret-2")).status, 202);
  await cli("webhook", "subscribe", "gh", "--events", "push");
  assert.equal((await post("new-secret-2")).body.status, "ignored");
});

Deno.test("out of file descriptors, the gateway exits non-zero with a reason and keeps its events", async () => {
  await using h = await tempHome();
  const llm = await startFakeLlm({ answer: () => "noted" });
  await using _llm = { [Symbol.asyncDispose]: () => llm.close() };
  const env = { AGENT_HOME: h.home, ...llm.env };
  await using gateway = await startGatewayProcess(env, [], { maxOpenFiles: 96 });
  const cliEnv = { ...env, WEBHOOK_PORT: String(new URL(gateway.url).port) };
  await subscribeAndPostIssue(gateway, cliEnv, "before-the-flood");

  // Connections that send nothing: Deno's server keeps them open until the descriptors run out.
  const idle: Deno.TcpConn[] = [];
  try {
    for (let i = 0; i < 200; i++) {
      idle.push(
        await Deno.connect({ hostname: "127.0.0.1", port: Number(new URL(gateway.url).port) }),
      );
    }
  } catch { /* refused once the gateway is gone */ }
  const code = await exitCodeWithin(gateway, 30_000);
  for (const connection of idle) {
    try {
      connection.close();
    } catch { /* closed by the exit */ }
  }
  assert.equal(code, 1, gateway.output());
  assert.match(gateway.output(), /stopped accepting connections \(.*Too many open files/);
  assert.match(gateway.output(), /see Security in the README/);
  const events = await runCli(["webhook", "events", "--json"], cliEnv);
  const rows = JSON.parse(events.stdout) as { delivery_id: string }[];
  assert.deepEqual(
    rows.map((row) => row.delivery_id),
    ["before-the-flood"],
    "the event accepted before the flood is in the database",
  );
});

Deno.test("a second gateway on the same home exits 1 and leaves the first one's running events alone", async () => {
  await using h = await tempHome();
  const llm = await startFakeLlm({ answer: () => ({ hang: true }) });
  await using _llm = { [Symbol.asyncDispose]: () => llm.close() };
  const env = { AGENT_HOME: h.home, ...llm.env };
  await using first = await startGatewayProcess(env);
  const cliEnv = { ...env, WEBHOOK_PORT: String(new URL(first.url).port) };
  await subscribeAndPostIssue(first, cliEnv, "held-by-the-first");
  const running = async () => {
    const events = await runCli(["webhook", "events", "--json"], cliEnv);
    return JSON.parse(events.stdout) as {
      status: string;
      attempts: number;
      attempts_detail: { error: string | null }[];
    }[];
  };
  await eventually(async () => (await running())[0]?.status === "running", {
    what: "the first gateway to run the event",
  });

  // Another port, so that only the state lock can stop it.
  const second = await runCli(["gateway", "run", "--port", "0"], env);
  assert.equal(second.code, 1, second.stdout + second.stderr);
  assert.match(second.stderr, /another gateway is already running with .*state/);
  const log = await Deno.readTextFile(join(h.home, "logs", "gateway.log"));
  assert.match(log, /FATAL gateway cannot start: another gateway is already running/);
  const [event] = await running();
  assert.equal(event.status, "running", "not requeued under the first gateway");
  assert.equal(event.attempts, 1);
  assert.deepEqual(event.attempts_detail.map((attempt) => attempt.error), [null]);
  assert.equal(llm.requests.length, 1, "the agent ran once");
});

/**
 * A gateway on a fresh home, with a fake LLM, the subscription `gh` (answers to the log) and one
 * issue event accepted, delivery id `first`. `post(delivery)` sends it another signed one.
 */
async function gatewayWithIssue(first: string) {
  const h = await tempHome();
  const llm = await startFakeLlm({ answer: () => "noted" });
  const env = { AGENT_HOME: h.home, ...llm.env };
  const gateway = await startGatewayProcess(env);
  const cliEnv = { ...env, WEBHOOK_PORT: String(new URL(gateway.url).port) };
  await subscribeAndPostIssue(gateway, cliEnv, first);
  const secret = (await runCli(["webhook", "list", "--json"], cliEnv)).stdout.match(
    /"secret":\s*"([^"]+)"/,
  )![1];
  const post = (delivery: string) =>
    postGitHub(`${gateway.url}/webhooks/gh`, githubExample("issues"), {
      event: "issues",
      secret,
      delivery,
    });
  return {
    home: h.home,
    env,
    gateway,
    post,
    [Symbol.asyncDispose]: async () => {
      await gateway[Symbol.asyncDispose]();
      await llm.close();
      await h[Symbol.asyncDispose]();
    },
  };
}

Deno.test("the gateway exits 1 when its state database is deleted, instead of acknowledging into it", async () => {
  await using g = await gatewayWithIssue("before");
  const { gateway } = g;
  await Deno.remove(join(g.home, "state", "gateway.db"));
  // From the delete on, until the gateway exits (its watch looks once a second), no event is
  // acknowledged into the file that is gone: each gets 503.
  const answers: number[] = [];
  for (let n = 0; n < 20; n++) {
    const sent = await g.post(`after-${n}`).catch(() => undefined);
    if (sent === undefined) break; // the gateway has exited
    answers.push(sent.status);
  }
  assert.ok(answers.length > 0, "events were sent before the gateway exited");
  assert.deepEqual(new Set(answers), new Set([503]), String(answers));
  const code = await exitCodeWithin(gateway, 10_000);
  assert.equal(code, 1, gateway.output());
  assert.match(gateway.output(), /state\/gateway\.db was deleted while the gateway ran/);
});

Deno.test("a deleted write-ahead log: 503s, the gateway exits 1, and the events it acknowledged are kept", async () => {
  await using g = await gatewayWithIssue("kept-0");
  const { gateway, env, post } = g;
  for (const delivery of ["kept-1", "kept-2"]) assert.equal((await post(delivery)).status, 202);
  await Deno.remove(join(g.home, "state", "gateway.db-wal"));
  const after = await post("after").catch(() => undefined);
  assert.equal(after?.status ?? 503, 503, "not acknowledged into a log that is gone");
  assert.equal(await exitCodeWithin(gateway, 10_000), 1, gateway.output());
  assert.match(gateway.output(), /gateway\.db-wal was deleted while the gateway ran/);

  const listed = await runCli(["webhook", "events", "--json"], env);
  assert.equal(listed.code, 0, listed.stderr);
  const ids = JSON.parse(listed.stdout).map((row: { delivery_id: string }) => row.delivery_id);
  assert.deepEqual(ids.sort(), ["kept-0", "kept-1", "kept-2"], "the 503 stored nothing");
});

Deno.test("a state database replaced while the gateway runs is not corrupted by the old one's log", async () => {
  await using h = await tempHome();
  const llm = await startFakeLlm({ answer: () => "noted" });
  await using _llm = { [Symbol.asyncDispose]: () => llm.close() };
  const env = { AGENT_HOME: h.home, ...llm.env };
  // The replacement: a backup, a single file.
  const backup = join(h.home, "backup.db");
  const other = new DatabaseSync(backup);
  other.exec("PRAGMA journal_mode = WAL; CREATE TABLE marker (n); INSERT INTO marker VALUES (42);");
  other.close();
  await using gateway = await startGatewayProcess(env);
  const cliEnv = { ...env, WEBHOOK_PORT: String(new URL(gateway.url).port) };
  await subscribeAndPostIssue(gateway, cliEnv, "in-the-old-log");
  await Deno.rename(backup, join(h.home, "state", "gateway.db"));
  const code = await exitCodeWithin(gateway, 10_000);
  assert.equal(code, 1, gateway.output());
  assert.match(gateway.output(), /was replaced while the gateway ran.*log was moved aside/);

  const replaced = new DatabaseSync(join(h.home, "state", "gateway.db"));
  const integrity = replaced.prepare("PRAGMA integrity_check").get() as Record<string, string>;
  const marker = replaced.prepare("SELECT n FROM marker").get() as { n: number };
  replaced.close();
  assert.equal(Object.values(integrity)[0], "ok");
  assert.equal(marker.n, 42);
  const aside = [...Deno.readDirSync(join(h.home, "state"))].map((entry) => entry.name);
  assert.ok(aside.some((name) => name.startsWith("gateway.db-wal.replaced-")), String(aside));
});

Deno.test("gateway.log records the start and the stop, with --quiet too", async () => {
  await using h = await tempHome();
  const gateway = await startGatewayProcess({ AGENT_HOME: h.home }, ["--quiet"]);
  assert.equal(await gateway.stop("SIGTERM"), 0, gateway.output());
  const log = await Deno.readTextFile(join(h.home, "logs", "gateway.log"));
  assert.match(log, new RegExp(`INFO gateway started on ${gateway.url} .*pid=\\d+`));
  assert.match(log, /INFO gateway stopping on a signal\n.*INFO gateway stopped\n$/);
});

Deno.test("webhook test and gateway setup find a gateway started on another port than config.yaml's", async () => {
  await using h = await tempHome();
  const llm = await startFakeLlm({ answer: () => "noted" });
  await using _llm = { [Symbol.asyncDispose]: () => llm.close() };
  const env = { AGENT_HOME: h.home, ...llm.env };
  // As `agent gateway run --port N`: config.yaml keeps its 8644.
  await using gateway = await startGatewayProcess(env);
  const sub = await runCli(
    ["webhook", "subscribe", "gh", "--events", "issues.opened", "--deliver", "log"],
    env,
  );
  assert.equal(sub.code, 0, sub.stderr);

  const test = await runCli(["webhook", "test", "gh", "--event", "issues"], env);
  assert.match(test.stdout, new RegExp(`^POST ${gateway.url}/webhooks/gh\\n200 `));
  assert.match(
    test.stdout,
    /Try --event issues --payload '\{"action":"opened"\}'\./,
    "the action goes in the payload, as GitHub sends it",
  );
  const opened = await runCli(
    ["webhook", "test", "gh", "--event", "issues", "--payload", '{"action":"opened"}'],
    env,
  );
  assert.equal(opened.code, 0, opened.stdout + opened.stderr);
  assert.match(opened.stdout, /"status":"accepted"/);

  const xdg = join(h.home, "xdg");
  const setup = await runCli(["gateway", "setup", "--port", "9999"], {
    ...env,
    XDG_CONFIG_HOME: xdg,
  });
  assert.equal(setup.code, 0, setup.stderr);
  assert.match(
    setup.stdout,
    new RegExp(`A gateway is running with this home \\(${gateway.url}\\): restart it for`),
  );
  // Run as the systemd service, the note says how to restart it.
  await Deno.mkdir(join(xdg, "systemd", "user"), { recursive: true });
  await Deno.writeTextFile(join(xdg, "systemd", "user", "agent-gateway.service"), "[Unit]\n");
  const again = await runCli(["gateway", "setup", "--port", "9998"], {
    ...env,
    XDG_CONFIG_HOME: xdg,
  });
  assert.match(again.stdout, /restart it \(systemctl --user restart agent-gateway\) for/);
});

Deno.test("webhook test signs as the scheme a subscription is pinned to, for every scheme", async () => {
  await using h = await tempHome();
  const llm = await startFakeLlm({ answer: () => "noted" });
  await using _llm = { [Symbol.asyncDispose]: () => llm.close() };
  const env = { AGENT_HOME: h.home, ...llm.env };
  await using _gateway = await startGatewayProcess(env);
  for (const scheme of SCHEME_NAMES) {
    const sub = await runCli(
      ["webhook", "subscribe", `pinned-${scheme}`, "--auth", scheme, "--events", "deploy"],
      env,
    );
    assert.equal(sub.code, 0, sub.stderr);
  }
  const tests = await Promise.all(
    SCHEME_NAMES.map((scheme) =>
      runCli(["webhook", "test", `pinned-${scheme}`, "--event", "deploy"], env)
    ),
  );
  tests.forEach((test, i) => {
    const what = `${SCHEME_NAMES[i]}: ${test.stdout}${test.stderr}`;
    assert.equal(test.code, 0, what);
    // The filter passed: the type went where each scheme's gateway reads it.
    assert.match(test.stdout, /^202 [^]*"status":"accepted".*"event":"deploy"/m, what);
  });
  const events = await runCli(["webhook", "events", "--json", "--limit", "20"], env);
  const sources = Object.fromEntries(
    (JSON.parse(events.stdout) as { subscription: string; source: string }[])
      .map((event) => [event.subscription.replace("pinned-", ""), event.source]),
  );
  // Who sent it, as the real senders' headers say (the `origin` target replies by it).
  assert.deepEqual(sources, {
    github: "github",
    gitlab: "gitlab",
    standard: "standard",
    stripe: "stripe",
    slack: "other",
    shopify: "other",
    linear: "other",
    generic: "other",
    bearer: "other",
  });

  // A Linear payload copied from a real delivery carries an old timestamp: the test's is now.
  const linear = await runCli(
    [
      "webhook",
      "test",
      "pinned-linear",
      "--event",
      "deploy",
      "--payload",
      '{"webhookTimestamp":1}',
    ],
    env,
  );
  assert.equal(linear.code, 0, linear.stdout + linear.stderr);
  // A Stripe payload's own type and id are what the gateway reads.
  const charge = '{"id":"evt_1","type":"charge.succeeded"}';
  const ignored = await runCli(["webhook", "test", "pinned-stripe", "--payload", charge], env);
  assert.match(ignored.stdout, /"status":"ignored","event":"charge\.succeeded"/);
  assert.match(
    ignored.stdout,
    /The event "charge\.succeeded" is not in .* Try "type": "deploy" in --payload\./,
  );
  const deploy = '{"id":"evt_1","type":"deploy"}';
  const first = await runCli(["webhook", "test", "pinned-stripe", "--payload", deploy], env);
  assert.match(first.stdout, /"status":"accepted"/, first.stdout);
  const again = await runCli(["webhook", "test", "pinned-stripe", "--payload", deploy], env);
  assert.match(again.stdout, /"status":"duplicate"[^]*for Stripe it is the payload's id/);
  // The hints read the answer's status, and name the event as the gateway labels it.
  const named = await runCli(["webhook", "test", "pinned-github", "--event", "duplicate"], env);
  assert.match(named.stdout, /"status":"ignored"/);
  assert.doesNotMatch(named.stdout, /already seen/);
  const closed = await runCli(
    ["webhook", "test", "pinned-github", "--event", "issues", "--payload", '{"action":"closed"}'],
    env,
  );
  assert.match(closed.stdout, /The event "issues\.closed" is not in the subscription's filter/);
  // A Slack event callback's `event` is an object, not a type: --event still sets the type.
  const slack = await runCli(
    ["webhook", "test", "pinned-slack", "--event", "deploy", "--payload", '{"event":{"type":"x"}}'],
    env,
  );
  assert.match(slack.stdout, /"status":"accepted"/, slack.stdout + slack.stderr);
  // Linear sends its type and action apart (`Issue`, `update`): the hint says so.
  const sub = await runCli(
    ["webhook", "subscribe", "linear-issues", "--auth", "linear", "--events", "Issue.update"],
    env,
  );
  assert.equal(sub.code, 0, sub.stderr);
  const created = await runCli(
    ["webhook", "test", "linear-issues", "--payload", '{"type":"Issue","action":"create"}'],
    env,
  );
  assert.match(
    created.stdout,
    /The event "Issue\.create" is not .* Try "type": "Issue" and "action": "update" in --payload\./,
  );
  // A type in the payload may be any text; one in a header must be printable ASCII.
  const accented = await runCli(["webhook", "test", "pinned-bearer", "--event", "déploy"], env);
  assert.match(accented.stdout, /"status":"ignored","event":"déploy"/, accented.stderr);
  const empty = await runCli(["webhook", "test", "pinned-github", "--event", ""], env);
  assert.equal(empty.code, 2);
  assert.match(empty.stderr, /--event must be 1 to 256 printable ASCII characters/);

  const bad = await runCli(
    ["webhook", "subscribe", "bad-key", "--auth", "standard", "--secret", "whsec_not base64!"],
    env,
  );
  assert.equal(bad.code, 0, bad.stderr);
  const refused = await runCli(["webhook", "test", "bad-key"], env);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /gives no standard signing key \(a whsec_ secret must be base64\)/);
});

Deno.test("an emptied subscription file: the gateway keeps serving its last good copy, and subscribe exits 1 naming the file and leaves it", async () => {
  await using h = await tempHome({ config: enabledConfig(0) });
  const path = join(h.home, "webhook_subscriptions.json");
  await Deno.writeTextFile(path, JSON.stringify({ gh: { secret: "gh-secret-123" } }));
  await using gateway = await startGatewayProcess({ AGENT_HOME: h.home });
  const post = async () => {
    const response = await fetch(`${gateway.url}/webhooks/gh`, await signedIssue("gh-secret-123"));
    await response.body?.cancel();
    return response.status;
  };
  assert.equal(await post(), 202);
  await Deno.writeTextFile(path, ""); // `: > webhook_subscriptions.json`
  const emptied = `${path} is corrupt: it is empty`;
  await eventually(async () => (await post(), gateway.output().includes(emptied)), {
    what: "the gateway's error naming the file",
  });
  assert.match(gateway.output(), /serving the last good copy \(1 subscription\)/);
  assert.equal(await post(), 202, "the last good copy is served");

  const env = { AGENT_HOME: h.home, WEBHOOK_PORT: String(new URL(gateway.url).port) };
  const sub = await runCli(["webhook", "subscribe", "other", "--secret", "other-secret-1"], env);
  assert.equal(sub.code, 1, sub.stdout + sub.stderr);
  assert.ok(sub.stderr.includes(emptied), sub.stderr);
  assert.equal(await Deno.readTextFile(path), "", "the file is left as it was");
  const list = await runCli(["webhook", "list"], env);
  assert.equal(list.code, 1);
  assert.ok(list.stderr.includes(emptied), list.stderr);
  assert.equal(await post(), 202);
});

Deno.test("the gateway warns of each subscription whose secret no sender can satisfy, at start and on each reload", async () => {
  await using h = await tempHome({ config: enabledConfig(0) });
  const path = join(h.home, "webhook_subscriptions.json");
  await Deno.writeTextFile(
    path,
    JSON.stringify({
      empty: { secret: "" },
      accented: { secret: "gl-tökén" },
      good: { secret: "good-secret-1" },
    }),
  );
  await using gateway = await startGatewayProcess({ AGENT_HOME: h.home });
  const lines = (name: string) =>
    gateway.output().split("\n").filter((line) => line.includes(`subscription "${name}" in`));
  await eventually(() => lines("empty").length === 1 && lines("accented").length === 1, {
    what: "one warning per record at start",
  });
  assert.match(
    lines("empty")[0],
    /WARN.*it has no secret .*refused with 403; give it one: agent webhook rotate-secret empty/,
  );
  assert.match(
    lines("accented")[0],
    /WARN.*its secret has characters no header can carry .*GitLab and Bearer senders/,
  );
  assert.doesNotMatch(gateway.output(), /gl-tökén/, "the secret itself is never written");
  assert.deepEqual(lines("good"), []);
  const empty = await fetch(`${gateway.url}/webhooks/empty`, await signedIssue("anything-1"));
  await empty.body?.cancel();
  assert.equal(empty.status, 403);

  const env = { AGENT_HOME: h.home, WEBHOOK_PORT: String(new URL(gateway.url).port) };
  const sub = await runCli(["webhook", "subscribe", "late", "--secret", "late-secret-1"], env);
  assert.equal(sub.code, 0, sub.stderr);
  const post = await fetch(`${gateway.url}/webhooks/late`, await signedIssue("late-secret-1"));
  await post.body?.cancel();
  assert.equal(post.status, 202);
  await eventually(() => lines("empty").length === 2 && lines("accented").length === 2, {
    what: "the warnings again once the file is read anew",
  });
});
