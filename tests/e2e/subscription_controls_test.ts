/**
 * End to end: payload filters, `webhook disable`/`enable` and `--auth none`, through the real
 * `main.ts gateway run` on a free port, the real CLI, and real GitHub payloads signed by
 * `@octokit/webhooks-methods`.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { githubExample } from "../fakes/github_examples.ts";
import { runCommand } from "../../commands/mod.ts";
import {
  enabledConfig,
  eventually,
  fakeContext,
  type GatewayProcess,
  runCli,
  signedGitHub,
  startGatewayProcess,
  tempHome,
} from "../_helpers.ts";

const BASE_IS_MAIN = 'pull_request.base.ref == "main"';

/** Posts `payload` as a GitHub `event`, signed with `secret`, and reads the JSON answer. */
async function postGitHub(
  gateway: GatewayProcess,
  name: string,
  payload: unknown,
  options: { event: string; secret: string },
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(
    `${gateway.url}/webhooks/${name}`,
    await signedGitHub(options.secret, payload, options),
  );
  return { status: response.status, body: await response.json() };
}

/** Runs a command in this process (the gateway sees its change as soon as it returns). */
async function cli(env: Record<string, string>, ...argv: string[]): Promise<void> {
  const ctx = fakeContext(env);
  assert.equal(await runCommand(argv, ctx), 0, ctx.err.join("\n"));
}

/** Waits until the gateway's log file has a line matching `pattern`. */
function logLine(home: string, pattern: RegExp): Promise<string> {
  return eventually(async () => {
    const log = await Deno.readTextFile(join(home, "logs", "gateway.log")).catch(() => "");
    return log.split("\n").find((line) => pattern.test(line));
  }, { what: `a log line matching ${pattern}` });
}

/** A real `pull_request` payload, its base branch set when given. */
function pullRequest(action: string, baseRef?: string): Record<string, unknown> {
  const payload = githubExample("pull_request", action);
  if (baseRef) (payload.pull_request as { base: { ref: string } }).base.ref = baseRef;
  return payload;
}

Deno.test("filters pass and ignore real GitHub events in the gateway, config.yaml's routes too", async () => {
  await using h = await tempHome({
    config: enabledConfig(
      0,
      `      routes:\n        ci:\n          secret: ci-secret-123\n          filters: ['${BASE_IS_MAIN}']\n`,
    ),
  });
  const env = { AGENT_HOME: h.home };
  await using gateway = await startGatewayProcess(env);
  await cli(
    env,
    ...["webhook", "subscribe", "prs", "--secret", "prs-secret-1", "--events", "pull_request"],
    ...["--filter", BASE_IS_MAIN, "--filter", 'headers["x-github-event"] == "pull_request"'],
  );
  const secret = "prs-secret-1";

  // The example as GitHub sent it targets master: ignored, with the reason and a log line.
  const onMaster = await postGitHub(gateway, "prs", pullRequest("opened"), {
    event: "pull_request",
    secret,
  });
  assert.equal(onMaster.status, 200);
  assert.deepEqual(onMaster.body, {
    status: "ignored",
    event: "pull_request.opened",
    reason: "filter",
  });
  await logLine(
    h.home,
    /ignored prs: event pull_request\.opened did not pass filter 1 \(pull_request\.base\.ref == "main"\): is false/,
  );
  const onMain = await postGitHub(gateway, "prs", pullRequest("opened", "main"), {
    event: "pull_request",
    secret,
  });
  assert.equal(onMain.status, 202, JSON.stringify(onMain.body));
  assert.equal(onMain.body.status, "accepted");

  // A label named bug: the labeled example has one, the opened one none.
  await cli(
    env,
    ...["webhook", "subscribe", "bugs", "--secret", "bugs-secret-1"],
    ...["--filter", 'pull_request.labels.exists(l, l.name == "bug")'],
  );
  const labeled = await postGitHub(gateway, "bugs", pullRequest("labeled"), {
    event: "pull_request",
    secret: "bugs-secret-1",
  });
  assert.equal(labeled.status, 202);
  const unlabeled = await postGitHub(gateway, "bugs", pullRequest("opened"), {
    event: "pull_request",
    secret: "bugs-secret-1",
  });
  assert.equal(unlabeled.body.reason, "filter");

  // The static route of config.yaml filters the same way.
  const ci = (payload: unknown) =>
    postGitHub(gateway, "ci", payload, { event: "pull_request", secret: "ci-secret-123" });
  assert.equal((await ci(pullRequest("opened"))).body.reason, "filter");
  assert.equal((await ci(pullRequest("opened", "main"))).status, 202);
});

Deno.test("subscribe points at a filter's syntax error, and webhook test says which filter failed on what", async () => {
  await using h = await tempHome();
  const env = { AGENT_HOME: h.home };
  await using gateway = await startGatewayProcess(env);
  const cliEnv = { ...env, WEBHOOK_PORT: new URL(gateway.url).port };

  const typo = await runCli(
    ["webhook", "subscribe", "prs", "--filter", 'pull_request.base.ref = "main"'],
    cliEnv,
  );
  assert.equal(typo.code, 2);
  assert.match(
    typo.stderr,
    /--filter has a mistake at column 23: Unexpected character: =\n {2}pull_request\.base\.ref = "main"\n {24}\^/,
  );

  const sub = await runCli(
    ["webhook", "subscribe", "prs", "--filter", 'action == "opened"', "--filter", BASE_IS_MAIN],
    cliEnv,
  );
  assert.equal(sub.code, 0, sub.stderr);
  const test = await runCli([
    "webhook",
    "test",
    "prs",
    "--event",
    "pull_request",
    "--wait",
    "0",
    "--payload",
    JSON.stringify(pullRequest("opened")),
  ], cliEnv);
  assert.equal(test.code, 0, test.stdout + test.stderr);
  assert.match(test.stdout, /"status":"ignored","event":"pull_request\.opened","reason":"filter"/);
  assert.match(
    test.stdout,
    /Filter 2 of 2, pull_request\.base\.ref == "main", is false; it read:\n {2}pull_request\.base\.ref = "master"\n/,
  );
  const missing = await runCli(
    ["webhook", "test", "prs", "--wait", "0", "--payload", '{"action":"opened"}'],
    cliEnv,
  );
  assert.match(
    missing.stdout,
    /Filter 2 of 2, .*, could not be evaluated: Unknown variable: pull_request; it read:\n {2}pull_request\.base\.ref = \(absent: Unknown variable: pull_request\)/,
  );
});

Deno.test("a disabled subscription answers as an unknown name in the running gateway, until enabled with its secret", async () => {
  await using h = await tempHome();
  const env = { AGENT_HOME: h.home };
  await using gateway = await startGatewayProcess(env);
  const cliEnv = { ...env, WEBHOOK_PORT: new URL(gateway.url).port };
  await cli(env, "webhook", "subscribe", "gh", "--secret", "gh-secret-123");
  const issue = githubExample("issues", "opened");
  const post = () => postGitHub(gateway, "gh", issue, { event: "issues", secret: "gh-secret-123" });
  assert.equal((await post()).status, 202);

  await cli(env, "webhook", "disable", "gh");
  const disabled = await fetch(
    `${gateway.url}/webhooks/gh`,
    await signedGitHub("gh-secret-123", issue, { event: "issues" }),
  );
  const unknown = await fetch(
    `${gateway.url}/webhooks/nope`,
    await signedGitHub("gh-secret-123", issue, { event: "issues" }),
  );
  assert.equal(disabled.status, 404);
  assert.deepEqual(await disabled.json(), { error: "unknown subscription: gh" });
  assert.equal(unknown.status, 404);
  assert.deepEqual(await unknown.json(), { error: "unknown subscription: nope" });
  assert.deepEqual([...disabled.headers.keys()], [...unknown.headers.keys()]);
  await logLine(h.home, /rejected gh: unknown subscription: gh \(disabled/);
  const test = await runCli(["webhook", "test", "gh", "--wait", "0"], cliEnv);
  assert.equal(test.code, 1);
  assert.match(test.stdout, /404 Not Found[\s\S]*"gh" is disabled[\s\S]*agent webhook enable gh/);

  await cli(env, "webhook", "enable", "gh");
  assert.equal((await post()).status, 202);
});

Deno.test("--auth none takes unsigned requests on loopback, and is refused on 0.0.0.0 with a log line", async () => {
  await using h = await tempHome();
  const env = { AGENT_HOME: h.home };
  await using gateway = await startGatewayProcess(env);
  const cliEnv = { ...env, WEBHOOK_PORT: new URL(gateway.url).port };
  await cli(env, "webhook", "subscribe", "local", "--auth", "none");
  const unsigned = () =>
    fetch(`${gateway.url}/webhooks/local`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-github-event": "issues" },
      body: JSON.stringify(githubExample("issues", "opened")),
    });
  const taken = await unsigned();
  assert.equal(taken.status, 202);
  assert.equal((await taken.json()).status, "accepted");
  const test = await runCli(["webhook", "test", "local", "--wait", "0"], cliEnv);
  assert.equal(test.code, 0, test.stdout + test.stderr);
  assert.match(test.stdout, /202 Accepted/);
  await gateway.stop();

  // The same home, the gateway now listening on every address: the record is kept, and refused.
  const wide = { ...env, WEBHOOK_HOST: "0.0.0.0" };
  await using open = await startGatewayProcess(wide);
  const port = new URL(open.url).port;
  const refused = await fetch(`http://127.0.0.1:${port}/webhooks/local`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: "{}",
  });
  assert.equal(refused.status, 404);
  assert.deepEqual(await refused.json(), { error: "unknown subscription: local" });
  await logLine(
    h.home,
    /rejected local: unknown subscription: local \(auth none is served only on a loopback address, and the gateway listens on 0\.0\.0\.0\)/,
  );
  const again = await runCli(["webhook", "subscribe", "other", "--auth", "none"], {
    ...wide,
    WEBHOOK_PORT: port,
  });
  assert.equal(again.code, 2);
  assert.match(
    again.stderr,
    /--auth none is accepted only while the gateway listens on a loopback/,
  );
});
