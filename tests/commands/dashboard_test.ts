/**
 * `agent dashboard` (docs/dashboard.md): the login link, the token, its rotation; and, with the
 * real gateway, `gateway run --dashboard-port` and `dashboard.enabled: false`.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { runCommand } from "../../commands/mod.ts";
import { UsageError } from "../../lib/errors.ts";
import {
  enabledConfig,
  eventually,
  fakeContext,
  runCli,
  startGatewayProcess,
  tempHome,
} from "../_helpers.ts";

/** The login link in what `agent dashboard` printed. */
const linkIn = (text: string) => text.match(/(http:\/\/\S+\/login\?code=\S+)/)?.[1];

Deno.test("agent dashboard creates the token (mode 0600) and prints a login link made from it", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const ctx = fakeContext({ AGENT_HOME: h.home });
  assert.equal(await runCommand(["dashboard"], ctx), 0);
  const tokenFile = join(h.home, "state", "dashboard.token");
  const token = (await Deno.readTextFile(tokenFile)).trim();
  assert.match(token, /^[A-Za-z0-9_-]{43}$/);
  assert.equal((await Deno.stat(tokenFile)).mode! & 0o777, 0o600);
  const link = linkIn(ctx.output())!;
  assert.match(link, /^http:\/\/127\.0\.0\.1:8645\/login\?code=[0-9a-z]+\.[\w-]{22}\.[\w-]{43}$/);
  assert.ok(!ctx.output().includes(token), "the link does not carry the token");
  assert.match(ctx.output(), /ssh -L 8645:127\.0\.0\.1:8645 <this server>/);
  assert.match(ctx.err.join("\n"), /No gateway is running with this home/);
  const again = fakeContext({ AGENT_HOME: h.home });
  await runCommand(["dashboard"], again);
  assert.notEqual(linkIn(again.output()), link, "each link is new");
  assert.equal((await Deno.readTextFile(tokenFile)).trim(), token, "the token stays");
});

Deno.test("agent dashboard --token prints the token alone; --rotate replaces it", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const first = fakeContext({ AGENT_HOME: h.home });
  assert.equal(await runCommand(["dashboard", "--token"], first), 0);
  const token = first.output();
  assert.match(token, /^[A-Za-z0-9_-]{43}$/);
  const rotated = fakeContext({ AGENT_HOME: h.home });
  assert.equal(await runCommand(["dashboard", "--rotate", "--token"], rotated), 0);
  assert.notEqual(rotated.output(), token);
  assert.match(rotated.err.join("\n"), /every session has ended/);
  const after = fakeContext({ AGENT_HOME: h.home });
  await runCommand(["dashboard", "--token"], after);
  assert.equal(after.output(), rotated.output());
});

Deno.test("agent dashboard says the dashboard is off, exit 1; refuses arguments, exit 2", async () => {
  await using h = await tempHome({ config: `${enabledConfig()}dashboard:\n  enabled: false\n` });
  const ctx = fakeContext({ AGENT_HOME: h.home });
  assert.equal(await runCommand(["dashboard"], ctx), 1);
  assert.match(ctx.err.join("\n"), /The dashboard is turned off \(dashboard\.enabled: false/);
  assert.equal(linkIn(ctx.output()), undefined);
  await assert.rejects(() => runCommand(["dashboard", "now"], ctx), UsageError);
  await assert.rejects(() => runCommand(["dashboard", "--rotat"], ctx), UsageError);
});

Deno.test("gateway run serves the dashboard on --dashboard-port, apart from the webhooks, and agent dashboard links to it", async () => {
  await using h = await tempHome({ config: enabledConfig(0) });
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (probe.addr as Deno.NetAddr).port;
  probe.close();
  await using gateway = await startGatewayProcess({ AGENT_HOME: h.home }, [
    "--dashboard-port",
    String(port),
  ]);
  const dashboardUrl = `http://127.0.0.1:${port}`;
  assert.match(gateway.output(), new RegExp(`dashboard: ${dashboardUrl} `));
  const onWebhookPort = await fetch(`${gateway.url}/events`);
  await onWebhookPort.body?.cancel();
  assert.equal(onWebhookPort.status, 404, "the webhook port serves no dashboard");
  const printed = await runCli(["dashboard"], { AGENT_HOME: h.home });
  assert.equal(printed.code, 0, printed.stderr);
  const link = linkIn(printed.stdout)!;
  assert.ok(link.startsWith(`${dashboardUrl}/login?code=`), link);
  const login = await fetch(link, { redirect: "manual" });
  await login.body?.cancel();
  assert.equal(login.status, 303);
  const cookie = login.headers.get("set-cookie")!.split(";")[0];
  const events = await fetch(`${dashboardUrl}/events`, { headers: { cookie } });
  assert.equal(events.status, 200);
  assert.match(await events.text(), /<h1>Events/);
});

Deno.test("gateway run with dashboard.enabled: false serves no dashboard, and says nothing of one", async () => {
  await using h = await tempHome({
    config: `${enabledConfig(0)}dashboard:\n  enabled: false\n`,
  });
  await using gateway = await startGatewayProcess({ AGENT_HOME: h.home });
  assert.doesNotMatch(gateway.output(), /dashboard:/);
  const printed = await runCli(["dashboard"], { AGENT_HOME: h.home });
  assert.equal(printed.code, 1);
  assert.match(printed.stderr, /turned off/);
});

Deno.test("gateway run --dashboard-port refuses what is no port, as a usage error", async () => {
  await using h = await tempHome({ config: enabledConfig(0) });
  const result = await runCli(["gateway", "run", "--dashboard-port", "70000"], {
    AGENT_HOME: h.home,
  });
  assert.equal(result.code, 2);
  assert.match(result.stderr, /--dashboard-port must be a whole number from 0 to 65535/);
});

Deno.test("gateway run serves the webhooks when the dashboard's port is taken, and says why", async () => {
  await using h = await tempHome({ config: enabledConfig(0) });
  using taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = String((taken.addr as Deno.NetAddr).port);
  await using gateway = await startGatewayProcess({ AGENT_HOME: h.home }, [
    "--dashboard-port",
    port,
  ]);
  assert.doesNotMatch(gateway.output(), /dashboard: http/);
  const health = await fetch(`${gateway.url}/health`);
  assert.equal(health.status, 200);
  await health.body?.cancel();
  const said = new RegExp(
    `the dashboard is not served: Cannot serve the dashboard on 127\\.0\\.0\\.1:${port}`,
  );
  await eventually(() => said.test(gateway.output()), { what: "the log line" });
});

Deno.test("gateway run stops at once on SIGTERM while a page follows the live updates", async () => {
  await using h = await tempHome({ config: enabledConfig(0) });
  const gateway = await startGatewayProcess({ AGENT_HOME: h.home });
  const dashboardUrl = gateway.output().match(/dashboard: (http:\/\/\S+)/)![1];
  const printed = await runCli(["dashboard"], { AGENT_HOME: h.home });
  const login = await fetch(linkIn(printed.stdout)!, { redirect: "manual" });
  await login.body?.cancel();
  const cookie = login.headers.get("set-cookie")!.split(";")[0];
  const stream = await fetch(`${dashboardUrl}/events/stream`, { headers: { cookie } });
  const reader = stream.body!.getReader();
  await reader.read(); // connected
  const started = performance.now();
  assert.equal(await gateway.stop("SIGTERM"), 0);
  assert.ok(performance.now() - started < 5000, "the open stream did not hold the stop");
  while (!(await reader.read()).done) { /* the stream ends with the gateway */ }
});
