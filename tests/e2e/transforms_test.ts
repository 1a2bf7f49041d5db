/**
 * End to end: transforms (docs/subscriptions.md#transforms) through the real `main.ts gateway
 * run`, the loopback LLM and Telegram fakes and real SQLite. The transform is a real program (a
 * Deno script, or `sh`) that reads the payload on stdin; files in its folder make it fail or
 * change what it prints, so a test can mend it while the gateway runs.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { startFakeTelegram } from "../fakes/chat_servers.ts";
import { type FakeLlmRequest, startFakeLlm } from "../fakes/llm_server.ts";
import {
  enabledConfig,
  eventually,
  processExited,
  runCli,
  signedGitHub,
  startGatewayProcess,
  tempHome,
} from "../_helpers.ts";

/**
 * The transform: skips a title with "quiet", else prints `{headline, note}` (the title in
 * capitals, the text of the file `note`); while the file `fail` exists it says so and exits 3.
 */
const TRANSFORM_SCRIPT = `
const dir = new URL(".", import.meta.url).pathname;
const read = (name) => Deno.readTextFile(dir + name).catch(() => undefined);
const payload = JSON.parse(await new Response(Deno.stdin.readable).text());
const fail = await read("fail");
if (fail !== undefined) {
  console.error("not ready: " + fail.trim());
  Deno.exit(3);
}
const title = payload.issue.title;
console.log(JSON.stringify(
  title.includes("quiet")
    ? { skip: true }
    : { headline: title.toUpperCase(), note: (await read("note"))?.trim() ?? "none" },
));
`;

/** A folder with the transform script; its `--transform` text runs it with Deno. */
async function transformFolder() {
  const dir = await Deno.makeTempDir({ prefix: "transform-e2e-" });
  const script = join(dir, "transform.js");
  await Deno.writeTextFile(script, TRANSFORM_SCRIPT);
  return {
    dir,
    command: `'${Deno.execPath()}' run --quiet --no-config --allow-read='${dir}' '${script}'`,
    [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }).catch(() => {}),
  };
}

/** A temporary home, the Telegram and LLM fakes (the LLM echoes the prompt), and their env. */
async function stack(config = enabledConfig(0)) {
  const home = await tempHome({ config });
  const telegram = startFakeTelegram();
  const llm = await startFakeLlm({
    answer: (request: FakeLlmRequest) => `echo: ${request.messages.at(-1)?.content}`,
  });
  return {
    home: home.home,
    env: { AGENT_HOME: home.home, ...telegram.env, ...llm.env },
    telegram,
    llm,
    [Symbol.asyncDispose]: async () => {
      await llm.close();
      await telegram.close();
      await home[Symbol.asyncDispose]();
    },
  };
}

/** Subscribes `name` to Telegram chat 4242 with the prompt and more flags; returns its secret. */
async function subscribe(env: Record<string, string>, name: string, flags: string[]) {
  const sub = await runCli([
    "webhook",
    "subscribe",
    name,
    "--prompt",
    "Headline {headline} ({note})",
    "--deliver",
    "telegram:4242",
    ...flags,
  ], env);
  assert.equal(sub.code, 0, sub.stderr);
  return sub.stdout.match(/Secret:\s+(\S+)/)![1];
}

/** Posts a signed `issues.opened` with `title`; returns the response's status and body. */
async function post(url: string, name: string, secret: string, title: string, delivery?: string) {
  const payload = { action: "opened", issue: { number: 1, title } };
  const init = await signedGitHub(secret, payload, delivery ? { delivery } : {});
  const response = await fetch(`${url}/webhooks/${name}`, init);
  return { status: response.status, body: await response.json() };
}

/** `agent webhook events --json`. */
async function events(env: Record<string, string>) {
  const result = await runCli(["webhook", "events", "--json", "--limit", "100"], env);
  assert.equal(result.code, 0, result.stderr);
  return JSON.parse(result.stdout) as {
    id: string;
    delivery_id: string;
    status: string;
    attempts: number;
    last_error: string | null;
  }[];
}

/** Waits for a line of the gateway's log file that matches `pattern`. */
function logLine(home: string, pattern: RegExp): Promise<string> {
  return eventually(async () => {
    const log = await Deno.readTextFile(join(home, "logs", "gateway.log")).catch(() => "");
    return log.split("\n").find((line) => pattern.test(line));
  }, { what: `a log line matching ${pattern}` });
}

/** A config whose agent retries each second, up to `maxAttempts`. */
function retryingConfig(maxAttempts = 5): string {
  return enabledConfig(
    0,
    "agent:\n  retry: {initial_delay_seconds: 1, max_delay_seconds: 1, " +
      `max_attempts: ${maxAttempts}}\n`,
  );
}

Deno.test("a transform reshapes the prompt, and its skip is answered 200 ignored", async () => {
  await using s = await stack();
  await using t = await transformFolder();
  await Deno.writeTextFile(join(t.dir, "note"), "first");
  await using gateway = await startGatewayProcess(s.env);
  const secret = await subscribe(s.env, "gh", ["--transform", t.command]);
  const listed = await runCli(["webhook", "list"], s.env);
  assert.match(listed.stdout, /Transform: .*transform\.js' \(time limit 5 s\)/);

  const loud = await post(gateway.url, "gh", secret, "Disk is full");
  assert.equal(loud.status, 202, JSON.stringify(loud.body));
  const quiet = await post(gateway.url, "gh", secret, "a quiet one");
  assert.equal(quiet.status, 200);
  assert.deepEqual(quiet.body, { status: "ignored", event: "issues.opened", reason: "transform" });
  await eventually(() => s.telegram.messages.length === 1, { what: "the answer sent" });
  assert.equal(s.llm.requests.length, 1);
  assert.equal(s.llm.requests[0].messages.at(-1)?.content, "Headline DISK IS FULL (first)");
  await logLine(s.home, /ignored gh: event issues\.opened skipped by its transform/);
  // webhook test explains the skip.
  const quietPayload = JSON.stringify({ action: "opened", issue: { number: 2, title: "quiet" } });
  const tested = await runCli(
    ["webhook", "test", "gh", "--event", "issues", "--payload", quietPayload, "--wait", "0"],
    s.env,
  );
  assert.match(tested.stdout, /"reason":"transform"/);
  assert.match(tested.stdout, /The transform \(.*\) printed \{"skip": true\} for this payload/);
  const shown = await runCli(["webhook", "show", loud.body.event_id], s.env);
  assert.match(shown.stdout, /Transformed by .*transform\.js\n {2}\| {"headline":"DISK IS FULL"/);

  // A replay runs the transform again: it prints what it prints now.
  await Deno.writeTextFile(join(t.dir, "note"), "second");
  const replay = await runCli(["webhook", "replay", loud.body.event_id], s.env);
  assert.equal(replay.code, 0, replay.stderr);
  await eventually(() => s.llm.requests.length === 2, { what: "the replay's run" });
  assert.equal(s.llm.requests[1].messages.at(-1)?.content, "Headline DISK IS FULL (second)");
});

Deno.test("a failing transform is accepted, retried with its error in events, then delivered", async () => {
  await using s = await stack(retryingConfig());
  await using t = await transformFolder();
  await Deno.writeTextFile(join(t.dir, "fail"), "the index is rebuilding");
  await using gateway = await startGatewayProcess(s.env);
  const secret = await subscribe(s.env, "gh", ["--transform", t.command]);

  const sent = await post(gateway.url, "gh", secret, "Crash on start");
  assert.equal(sent.status, 202, JSON.stringify(sent.body));
  const failing = await eventually(async () => {
    const [row] = await events(s.env);
    return row?.last_error ? row : undefined;
  }, { what: "the transform's error in events", timeoutMs: 20_000 });
  // Waiting for its next attempt, or in it: not failed, not delivered.
  assert.ok(["queued", "running"].includes(failing.status), failing.status);
  assert.match(
    failing.last_error!,
    /transform ".*" exited with 3: not ready: the index is rebuilding/,
  );
  assert.equal(s.llm.requests.length, 0, "no agent run without the transform's JSON");
  await logLine(s.home, /transform of gh failed on event issues\.opened, accepted/);

  await Deno.remove(join(t.dir, "fail"));
  await eventually(() => s.telegram.messages.length === 1, {
    what: "the answer sent once the transform works",
    timeoutMs: 20_000,
  });
  assert.equal(s.llm.requests[0].messages.at(-1)?.content, "Headline CRASH ON START (none)");
  const [row] = await events(s.env);
  assert.equal(row.status, "delivered");
  assert.ok(row.attempts >= 2, `attempts: ${row.attempts}`);
});

Deno.test("a transform past its time limit is killed, and the event waits for a retry", async () => {
  await using s = await stack(retryingConfig(1));
  await using t = await transformFolder();
  const hang = join(t.dir, "hang.sh");
  await Deno.writeTextFile(hang, `echo $$ >> "${t.dir}/pids"; exec sleep 60`);
  await using gateway = await startGatewayProcess(s.env);
  const secret = await subscribe(s.env, "gh", [
    "--transform",
    `sh '${hang}'`,
    "--transform-timeout",
    "0.5",
  ]);
  const started = Date.now();
  const sent = await post(gateway.url, "gh", secret, "Slow");
  assert.equal(sent.status, 202);
  assert.ok(Date.now() - started < 10_000, "answered once the limit passed");
  const failed = await eventually(async () => {
    const [row] = await events(s.env);
    return row?.status === "failed" ? row : undefined;
  }, { what: "the event failed after its one attempt", timeoutMs: 20_000 });
  assert.match(failed.last_error!, /did not finish within 0\.5 s and was killed/);
  const pids = (await Deno.readTextFile(join(t.dir, "pids"))).trim().split("\n").map(Number);
  assert.equal(pids.length, 2, "run at ingest and by the worker's one attempt");
  for (const pid of pids) assert.ok(await processExited(pid), `transform ${pid} still runs`);
  assert.equal(s.llm.requests.length, 0);
});

Deno.test("subscribe refuses a transform that needs a shell, and '' removes one", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const env = { AGENT_HOME: h.home };
  for (
    const [flags, message] of [
      [
        ["--transform", "jq . | head -1"],
        /--transform "jq \. \| head -1": the operator \| needs a shell/,
      ],
      [["--transform", "cat *.json"], /"\*\.json" is a glob, which needs a shell/],
      [["--transform", "jq --arg h $HOME ."], /\$HOME is a variable/],
      [
        ["--transform", "jq .", "--transform-timeout", "0"],
        /--transform-timeout must be a number of seconds over 0/,
      ],
    ] as const
  ) {
    const result = await runCli(["webhook", "subscribe", "gh", ...flags], env);
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, message);
  }
  const made = await runCli(["webhook", "subscribe", "gh", "--transform", "jq -c '.a | .b'"], env);
  assert.equal(made.code, 0, made.stderr);
  assert.match((await runCli(["webhook", "list"], env)).stdout, /Transform: jq -c '\.a \| \.b'/);
  const cleared = await runCli(["webhook", "subscribe", "gh", "--transform", ""], env);
  assert.equal(cleared.code, 0, cleared.stderr);
  assert.doesNotMatch((await runCli(["webhook", "list"], env)).stdout, /Transform/);
});

Deno.test("kill -9 while failed transforms wait in the queue: each delivered once after restart", async () => {
  await using s = await stack(retryingConfig(100));
  await using t = await transformFolder();
  await Deno.writeTextFile(join(t.dir, "fail"), "down");
  const first = await startGatewayProcess(s.env);
  const secret = await subscribe(s.env, "gh", ["--transform", t.command]);
  const titles = ["one", "two", "three"];
  for (const title of titles) {
    const sent = await post(first.url, "gh", secret, title, `kill-${title}`);
    assert.equal(sent.status, 202);
  }
  await eventually(async () => {
    const rows = await events(s.env);
    return rows.length === 3 && rows.every((row) => row.last_error?.includes("not ready: down"));
  }, { what: "three events waiting for their transform", timeoutMs: 20_000 });
  assert.notEqual(await first.stop("SIGKILL"), 0);
  assert.equal(s.telegram.messages.length, 0);

  await Deno.remove(join(t.dir, "fail"));
  await using second = await startGatewayProcess(s.env);
  await eventually(async () => {
    const rows = await events(s.env);
    return rows.length === 3 && rows.every((row) => row.status === "delivered");
  }, { what: "the three delivered after the restart", timeoutMs: 30_000 });
  const prompts = s.llm.requests.map((request) => request.messages.at(-1)?.content).sort();
  assert.deepEqual(prompts, titles.map((title) => `Headline ${title.toUpperCase()} (none)`).sort());
  assert.equal(s.telegram.messages.length, 3, "each delivered once");
  assert.equal(await second.stop("SIGTERM"), 0);
});

Deno.test("a direct message is rendered from the transform's JSON", async () => {
  await using s = await stack();
  await using t = await transformFolder();
  await using gateway = await startGatewayProcess(s.env);
  const secret = await subscribe(s.env, "direct", ["--deliver-only", "--transform", t.command]);
  const sent = await post(gateway.url, "direct", secret, "Build broke");
  assert.equal(sent.status, 200, JSON.stringify(sent.body));
  assert.equal(sent.body.status, "delivered");
  assert.deepEqual(s.telegram.messages.map((message) => message.text), [
    "Headline BUILD BROKE (none)",
  ]);
  assert.equal(s.llm.requests.length, 0);
});

Deno.test("a gateway stopped during a direct message's transform requeues it: no attempt lost", async () => {
  await using s = await stack(retryingConfig(1));
  await using t = await transformFolder();
  // Fails at ingest (so the worker runs it), then hangs until the stop kills it.
  const flaky = join(t.dir, "flaky.sh");
  await Deno.writeTextFile(
    flaky,
    `cat >/dev/null; if [ -f "${t.dir}/pids" ]; then echo $$ >> "${t.dir}/pids"; exec sleep 60; ` +
      `fi; echo $$ >> "${t.dir}/pids"; echo "not yet" >&2; exit 3`,
  );
  const gateway = await startGatewayProcess(s.env);
  const secret = await subscribe(s.env, "direct", [
    "--deliver-only",
    "--transform",
    `sh '${flaky}'`,
    "--transform-timeout",
    "60",
  ]);
  const sent = await post(gateway.url, "direct", secret, "Build broke");
  assert.equal(sent.status, 202, JSON.stringify(sent.body));
  const pids = await eventually(async () => {
    const lines = (await Deno.readTextFile(join(t.dir, "pids"))).trim().split("\n");
    return lines.length === 2 ? lines.map(Number) : undefined;
  }, { what: "the worker's run of the transform" });
  assert.equal(await gateway.stop("SIGTERM"), 0);
  assert.ok(await processExited(pids[1]), "the stop killed the transform");
  const [row] = await events(s.env);
  assert.equal(row.status, "queued", `not failed by the stop: ${row.last_error}`);
  assert.equal(s.telegram.messages.length, 0);
});

Deno.test("a sender's retry of a delivery is answered duplicate without running the transform", async () => {
  await using s = await stack();
  await using t = await transformFolder();
  const counted = join(t.dir, "counted.sh");
  await Deno.writeTextFile(
    counted,
    `cat >/dev/null; echo $$ >> "${t.dir}/pids"; echo '{"headline": "X", "note": "n"}'`,
  );
  await using gateway = await startGatewayProcess(s.env);
  const secret = await subscribe(s.env, "gh", ["--transform", `sh '${counted}'`]);
  const first = await post(gateway.url, "gh", secret, "Once", "retry-1");
  assert.equal(first.status, 202);
  const retry = await post(gateway.url, "gh", secret, "Once", "retry-1");
  assert.equal(retry.status, 200);
  assert.equal(retry.body.status, "duplicate");
  const runs = (await Deno.readTextFile(join(t.dir, "pids"))).trim().split("\n");
  assert.equal(runs.length, 1, "the program ran for the first request only");
});

Deno.test("a stopping gateway kills a transform at ingest and accepts its event for the next start", async () => {
  await using s = await stack();
  await using t = await transformFolder();
  const hang = join(t.dir, "hang.sh");
  await Deno.writeTextFile(hang, `cat >/dev/null; echo $$ >> "${t.dir}/pids"; exec sleep 60`);
  const gateway = await startGatewayProcess(s.env);
  const secret = await subscribe(s.env, "gh", [
    "--transform",
    `sh '${hang}'`,
    "--transform-timeout",
    "60",
  ]);
  const sent = post(gateway.url, "gh", secret, "Slow");
  const [pid] = await eventually(async () => {
    const text = await Deno.readTextFile(join(t.dir, "pids")).catch(() => "");
    return text.trim() ? text.trim().split("\n").map(Number) : undefined;
  }, { what: "the transform at ingest" });
  const started = Date.now();
  const answered = sent.then((response) => ({ ...response, ms: Date.now() - started }));
  const stopped = gateway.stop("SIGTERM");
  const { status, ms } = await answered;
  assert.equal(status, 202, "accepted, its transform pending");
  assert.ok(ms < 3_000, `answered ${ms} ms after the stop began, not at the 5 s limit`);
  assert.equal(await stopped, 0);
  assert.ok(await processExited(pid), "the transform was killed");
  const [row] = await events(s.env);
  assert.equal(row.status, "queued");
});

Deno.test("transforms past the listener's bound are accepted at once for the worker", async () => {
  await using s = await stack();
  await using t = await transformFolder();
  const slow = join(t.dir, "slow.sh");
  await Deno.writeTextFile(
    slow,
    `cat >/dev/null; echo $$ >> "${t.dir}/pids"; sleep 4; echo '{"headline": "X", "note": "n"}'`,
  );
  await using gateway = await startGatewayProcess(s.env);
  const secret = await subscribe(s.env, "gh", ["--transform", `sh '${slow}'`]);
  const bound = Array.from({ length: 8 }, (_, i) => post(gateway.url, "gh", secret, `t${i}`));
  await eventually(async () => {
    const text = await Deno.readTextFile(join(t.dir, "pids")).catch(() => "");
    return text.trim().split("\n").length >= 8;
  }, { what: "eight transforms running at ingest" });
  const started = Date.now();
  const extra = await post(gateway.url, "gh", secret, "ninth");
  assert.equal(extra.status, 202);
  assert.ok(Date.now() - started < 2_000, `answered in ${Date.now() - started} ms, not 4 s`);
  for (const response of await Promise.all(bound)) assert.equal(response.status, 202);
  await eventually(async () => {
    const rows = await events(s.env);
    return rows.length === 9 && rows.every((row) => row.status === "delivered");
  }, { what: "all nine delivered", timeoutMs: 30_000 });
});

Deno.test("events whose transform failed at ingest are not folded into one coalesced run", async () => {
  await using s = await stack(retryingConfig());
  await using t = await transformFolder();
  await Deno.writeTextFile(join(t.dir, "fail"), "down");
  await using gateway = await startGatewayProcess(s.env);
  const secret = await subscribe(s.env, "gh", [
    "--transform",
    t.command,
    "--coalesce",
    "2",
    "--coalesce-key",
    "{issue.number}",
  ]);
  for (const title of ["first", "second"]) {
    assert.equal((await post(gateway.url, "gh", secret, title)).status, 202);
  }
  await Deno.remove(join(t.dir, "fail"));
  await eventually(() => s.telegram.messages.length === 2, {
    what: "two answers, one per event",
    timeoutMs: 20_000,
  });
  const prompts = s.llm.requests.map((request) => request.messages.at(-1)?.content).sort();
  assert.deepEqual(prompts, ["Headline FIRST (none)", "Headline SECOND (none)"]);
});

Deno.test("a transform slower than the sender waits is left to the worker, with its own limit", async () => {
  await using s = await stack(retryingConfig());
  await using t = await transformFolder();
  const slow = join(t.dir, "slow.sh");
  await Deno.writeTextFile(slow, `sleep 9; echo '{"headline": "SLOW", "note": "late"}'`);
  await using gateway = await startGatewayProcess(s.env);
  const secret = await subscribe(s.env, "gh", [
    "--transform",
    `sh '${slow}'`,
    "--transform-timeout",
    "20",
  ]);
  const started = Date.now();
  const sent = await post(gateway.url, "gh", secret, "whatever");
  const answeredMs = Date.now() - started;
  assert.equal(sent.status, 202);
  assert.ok(answeredMs < 8_000, `answered after ${answeredMs} ms: the sender waited for it all`);
  await eventually(() => s.telegram.messages.length === 1, {
    what: "the answer, once the worker's run finished",
    timeoutMs: 30_000,
  });
  assert.equal(s.llm.requests[0].messages.at(-1)?.content, "Headline SLOW (late)");
});
