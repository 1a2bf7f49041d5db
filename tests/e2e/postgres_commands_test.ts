/**
 * What works on SQLite works on PostgreSQL (docs/scaling.md), through the real gateway and the
 * real CLI on one database: `webhook events`, `webhook show`, `webhook replay`,
 * `webhook rotate-secret` (the gateway serving the new secret at once) and `/metrics` on the
 * dashboard's listener.
 *
 * @module
 */
import assert from "node:assert/strict";
import { githubExample } from "../fakes/github_examples.ts";
import { startPostgres, type ThrowawayPostgres } from "../fakes/postgres.ts";
import { eventually, runCli, signedGitHub, startGatewayProcess } from "../_helpers.ts";
import { gatewaysStack, postIssue } from "./_postgres_gateways.ts";

let started: Promise<ThrowawayPostgres> | undefined;
const server = () => started ??= startPostgres();

Deno.test("postgres: events, show, replay, rotate-secret and /metrics work on the database", async () => {
  await using s = await gatewaysStack(await server(), { homes: 1 });
  const env = { ...s.envs[0], DASHBOARD_PORT: "0" };
  await using gateway = await startGatewayProcess(env);
  const posted = await postIssue(gateway.url, "cmd-1");
  assert.equal(posted.status, 202, posted.body);
  await eventually(() => s.telegram.messages.length === 1, { what: "the first message" });

  const cli = async (...args: string[]) => {
    const result = await runCli(args, env);
    assert.equal(result.code, 0, `${args.join(" ")}: ${result.stderr}`);
    return result.stdout;
  };
  const listed = async () =>
    JSON.parse(await cli("webhook", "events", "--json")) as { id: string; status: string }[];
  const [event] = await eventually(async () => {
    const rows = await listed();
    return rows[0]?.status === "delivered" ? rows : undefined;
  }, { what: "the event delivered in webhook events" });
  assert.match(await cli("webhook", "show", event.id), /cmd-1/);

  await cli("webhook", "replay", event.id);
  await eventually(() => s.telegram.messages.length === 2, { what: "the replay's message" });
  assert.equal(s.telegram.messages[1].text, s.telegram.messages[0].text);

  const rotated = JSON.parse(await cli("webhook", "rotate-secret", "ci", "--grace", "0", "--json"));
  const issue = githubExample("issues", "opened");
  const signed = await signedGitHub(rotated.secret, issue, { delivery: "cmd-2" });
  const response = await fetch(`${gateway.url}/webhooks/ci`, signed);
  assert.equal(response.status, 202, await response.text());
  await eventually(() => s.telegram.messages.length === 3, { what: "the third message" });

  const dashboard = gateway.output().match(/dashboard: (http:\/\/\S+)/)![1];
  const token = (await cli("dashboard", "--token")).trim();
  const metrics = await eventually(async () => {
    const scrape = await fetch(`${dashboard}/metrics`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const text = await scrape.text();
    return /agent_events_total\{[^}]*subscription="ci"[^}]*\} 2\b/.test(text) ? text : undefined;
  }, { what: "/metrics counting the two events accepted" });
  assert.match(metrics, /agent_events_queued 0\b/);
  assert.equal(await gateway.stop("SIGTERM"), 0);
});

Deno.test("postgres commands e2e: the throwaway server stops", async () => {
  await (await started)?.stop();
});
