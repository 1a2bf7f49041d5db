/**
 * Refused requests cannot flood the log: past a number of lines per window they are counted,
 * and the count is logged, while every request still gets its answer and accepted events are
 * still logged.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { LogRecord } from "@logtape/logtape";
import { sign } from "@octokit/webhooks-methods";
import { loadConfig } from "../../lib/config.ts";
import { startLogging, stopLogging } from "../../lib/log.ts";
import { createRejectionLogBudget } from "../../server/_rejection_log.ts";
import { startGateway } from "../../server/gateway.ts";
import { enabledConfig, tempHome } from "../_helpers.ts";

Deno.test("the budget logs the first refusals of a window, then counts the rest by status", () => {
  let now = 0;
  const budget = createRejectionLogBudget({ linesPerWindow: 2, windowMs: 1000 }, () => now);
  assert.deepEqual(budget.take(404), { log: true, notice: undefined });
  assert.deepEqual(budget.take(404), { log: true, notice: undefined });
  assert.deepEqual(budget.take(401), {
    log: false,
    notice: "over 2 refused requests in 1 s: the rest of this 1 s are counted, not logged",
  });
  assert.deepEqual(budget.take(404), { log: false });
  assert.deepEqual(budget.take(404), { log: false });
  now = 999;
  assert.deepEqual(budget.take(405), { log: false });
  now = 1500;
  assert.deepEqual(budget.take(404), {
    log: true,
    notice: "4 more refused requests were not logged (401: 1, 404: 2, 405: 1)",
  });
  assert.equal(budget.flush(), undefined, "nothing left out since");
  budget.take(404);
  budget.take(413);
  assert.equal(budget.flush(), "1 more refused requests were not logged (413: 1)");
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
    rejectionLog: { linesPerWindow: 5, windowMs: 1000 },
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
      lines().filter((line) => line.startsWith("over 5 refused requests in 1 s")).length,
      1,
    );
    assert.ok(lines().some((line) => line.startsWith("accepted gh issues.opened")));

    await new Promise((resolve) => setTimeout(resolve, 1000));
    const after = await fetch(`${gateway.url}/webhooks/nope-again`, { method: "POST" });
    await after.body?.cancel();
    assert.ok(lines().includes("25 more refused requests were not logged (404: 25)"));
    assert.equal(lines().filter((line) => line.startsWith("rejected")).length, 6);
  } finally {
    await gateway.stop();
    await stopLogging();
  }
  const file = await Deno.readTextFile(join(h.home, "logs", "gateway.log"));
  assert.match(file, /25 more refused requests were not logged \(404: 25\)/);
});
