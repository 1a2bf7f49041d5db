/**
 * Refused requests cannot flood the log: past a number of lines per window they are counted,
 * and the count is logged, while every request still gets its answer and accepted events are
 * still logged.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { LogRecord } from "@logtape/logtape";
import { sign } from "@octokit/webhooks-methods";
import { loadConfig } from "../../../lib/config/mod.ts";
import { startLogging, stopLogging } from "../../../lib/log.ts";
import { createRefusalLog } from "../../../server/ingest/_refusal_log.ts";
import { startGateway } from "../../../server/gateway.ts";
import { enabledConfig, eventually, tempHome } from "../../_helpers.ts";

Deno.test("the refusal log keeps a share per subscription, and counts the rest by pool and status", () => {
  let now = 0;
  const warnings: string[] = [];
  const written: string[] = [];
  const refusals = createRefusalLog((line) => warnings.push(line), {
    limits: { linesPerWindow: 2, windowMs: 1000 },
    now: () => now,
  });
  const refuse = (pool: string | undefined, status: number) =>
    refusals.refused(pool, status, () => written.push(`${pool ?? "-"} ${status}`));
  for (let i = 0; i < 5; i++) refuse(undefined, 404);
  assert.deepEqual(written, ["- 404", "- 404"]);
  assert.deepEqual(warnings, [
    "over 2 refused requests to unknown names and paths in 1 s: the rest are counted, not logged, until the count is written",
  ]);
  // A flood of unknown names leaves a subscription's refusals their own share.
  refuse("gh", 401);
  refuse("gh", 401);
  refuse("gh", 401);
  refuse("gh", 413);
  // Too many bodies at once is a refusal too: a flood of them must not rotate the log away.
  refuse("gh", 503);
  assert.deepEqual(written.slice(2), ["gh 401", "gh 401"]);
  refusals.endWindowIfOver();
  assert.equal(warnings.length, 2, "the window is not over yet");
  now = 1000;
  refusals.endWindowIfOver();
  assert.equal(
    warnings.at(-1),
    "6 refused requests were not logged (unknown names and paths: 404 ×3; gh: 401 ×1, 413 ×1, 503 ×1)",
  );
  refuse("gh", 401);
  assert.equal(written.at(-1), "gh 401", "a new window, a new share");
  refusals.flush();
  assert.equal(warnings.length, 3, "nothing left out since");
});

Deno.test("a flood of refused requests leaves the log its lines about accepted events", async () => {
  await using h = await tempHome({ config: enabledConfig(0) });
  const secret = "flood-secret-123";
  await Deno.writeTextFile(
    join(h.home, "webhook_subscriptions.json"),
    JSON.stringify({ gh: { secret, rate_limit: 1000 } }),
  );
  const records: LogRecord[] = [];
  await startLogging({
    file: join(h.home, "logs", "gateway.log"),
    extraSinks: [(record) => void records.push(record)],
  });
  const config = await loadConfig({ AGENT_HOME: h.home, HOME: "/nonexistent" });
  const gateway = await startGateway(config, {
    fetch: () => Promise.reject(new Error("no network in tests")),
    refusalLog: { linesPerWindow: 5, windowMs: 1000 },
  });
  const lines = () => records.map((record) => record.message.join(""));
  try {
    const started = performance.now();
    for (let i = 0; i < 30; i++) {
      const response = await fetch(`${gateway.url}/webhooks/nope-${i}`, { method: "POST" });
      await response.body?.cancel();
      assert.equal(response.status, 404, "every request still gets its answer");
    }
    const body = JSON.stringify({ action: "opened", issue: { number: 1 } });
    const accepted = await fetch(`${gateway.url}/webhooks/gh`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-github-event": "issues",
        "x-github-delivery": crypto.randomUUID(),
        "x-hub-signature-256": await sign(secret, body),
      },
      body,
    });
    await accepted.body?.cancel();
    assert.equal(accepted.status, 202);
    // All of it within the window, or the count below would be split between two windows.
    assert.ok(performance.now() - started < 1000, "sent within one window");
    assert.equal(lines().filter((line) => line.startsWith("rejected")).length, 5);
    assert.equal(
      lines().filter((line) => line.startsWith("over 5 refused requests to unknown names")).length,
      1,
    );
    assert.ok(lines().some((line) => line.startsWith("accepted gh issues.opened")));

    // Written when the window ends, without another refusal.
    await eventually(
      () =>
        lines().includes("25 refused requests were not logged (unknown names and paths: 404 ×25)"),
      { what: "the count of refusals left out" },
    );
  } finally {
    await gateway.stop();
    await stopLogging();
  }
  const file = await Deno.readTextFile(join(h.home, "logs", "gateway.log"));
  assert.match(file, /25 refused requests were not logged \(unknown names and paths: 404 ×25\)/);
});
