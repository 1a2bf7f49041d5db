/**
 * The running gateway (in process, on a real port) and the subscription file: changes made
 * between two requests, faster than the file is re-checked, are honoured on the next request.
 * Also its stop, and what it makes of an agent answer cut at the model's length limit.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { LogRecord } from "@logtape/logtape";
import { loadConfig } from "../../lib/config/mod.ts";
import { startLogging, stopLogging } from "../../lib/log.ts";
import { updateSubscriptions } from "../../lib/subscriptions/file_store.ts";
import { startGateway } from "../../server/gateway.ts";
import { startFakeLlm } from "../fakes/llm_server.ts";
import { enabledConfig, eventually, signedIssue, tempHome } from "../_helpers.ts";

const OLD_SECRET = "the-old-secret-0123456789";
const NEW_SECRET = "the-new-secret-0123456789";

Deno.test("a subscription or secret written a moment ago is honoured on the next request", async () => {
  await using h = await tempHome({ config: enabledConfig(0) });
  const path = join(h.home, "webhook_subscriptions.json");
  const config = await loadConfig({ AGENT_HOME: h.home, HOME: "/nonexistent" });
  const gateway = await startGateway(config, {
    fetch: () => Promise.reject(new Error("no network in tests")),
  });
  const post = async (name: string, secret: string) => {
    const response = await fetch(`${gateway.url}/webhooks/${name}`, await signedIssue(secret));
    await response.body?.cancel();
    return response.status;
  };
  try {
    assert.equal(await post("gh", OLD_SECRET), 404);
    await updateSubscriptions(path, (records) => void (records.gh = { secret: OLD_SECRET }));
    assert.equal(await post("gh", OLD_SECRET), 202, "subscribed");
    await updateSubscriptions(path, (records) => void (records.gh.secret = NEW_SECRET));
    assert.equal(await post("gh", NEW_SECRET), 202, "the new secret at once");
    await updateSubscriptions(path, (records) => void delete records.gh);
    assert.equal(await post("gh", "not-the-secret"), 404, "removed");
  } finally {
    await gateway.stop({ deadlineMs: 0 });
  }
});

Deno.test("a corrupt subscription file is reported once, without its secrets, and its repair too", async () => {
  await using h = await tempHome({ config: enabledConfig(0) });
  const path = join(h.home, "webhook_subscriptions.json");
  // A hand edit that lost the quotes around a secret.
  await Deno.writeTextFile(path, `{"gh": {"secret": ${OLD_SECRET}}}`, { mode: 0o600 });
  const records: LogRecord[] = [];
  await startLogging({ extraSinks: [(record) => void records.push(record)] });
  const config = await loadConfig({ AGENT_HOME: h.home, HOME: "/nonexistent" });
  const gateway = await startGateway(config, {
    fetch: () => Promise.reject(new Error("no network in tests")),
  });
  const post = async () => {
    const response = await fetch(`${gateway.url}/webhooks/gh`, await signedIssue(OLD_SECRET));
    await response.body?.cancel();
    return response.status;
  };
  const about = () =>
    records.filter((r) => r.category.join(".") === "agent.subscriptions")
      .map((r) => [r.level, String(r.properties.reason ?? r.rawMessage)]);
  try {
    assert.equal(await post(), 404, "the gateway has no good copy yet");
    assert.equal(await post(), 404);
    assert.equal(about().length, 1, "reported once, at start");
    assert.equal(about()[0][0], "error");
    assert.match(about()[0][1], /webhook_subscriptions\.json is corrupt \(not valid JSON/);
    assert.doesNotMatch(JSON.stringify(records.map((r) => r.properties)), /the-old/);
    await Deno.writeTextFile(path, JSON.stringify({ gh: { secret: OLD_SECRET } }));
    assert.equal(await post(), 202, "repaired");
    assert.deepEqual(about()[1], ["info", "subscription file readable again"]);
  } finally {
    await gateway.stop({ deadlineMs: 0 });
    await stopLogging();
  }
});

Deno.test("stop() ends within its deadline while a sender stalls in the middle of a body", async () => {
  await using h = await tempHome({ config: enabledConfig(0) });
  const config = await loadConfig({ AGENT_HOME: h.home, HOME: "/nonexistent" });
  const gateway = await startGateway(config, {
    fetch: () => Promise.reject(new Error("no network in tests")),
  });
  const connection = await Deno.connect({ hostname: "127.0.0.1", port: gateway.port });
  try {
    // Headers announce 100 bytes; 5 arrive, then nothing: the connection stays open.
    await connection.write(
      new TextEncoder().encode(
        "POST /webhooks/gh HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n" +
          'content-length: 100\r\n\r\n{"a":',
      ),
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    const started = performance.now();
    await gateway.stop({ deadlineMs: 300 });
    const tookMs = performance.now() - started;
    assert.ok(tookMs < 3_000, `stop() took ${Math.round(tookMs)} ms`);
  } finally {
    connection.close();
  }
});

Deno.test("an answer cut at the model's length limit is delivered with its marker and logged as a warning", async () => {
  const llm = await startFakeLlm({
    answer: () => ({
      completion: { message: { content: "The build failed because" }, finishReason: "length" },
    }),
  });
  await using _llm = { [Symbol.asyncDispose]: () => llm.close() };
  await using h = await tempHome({ config: enabledConfig(0) });
  await updateSubscriptions(
    join(h.home, "webhook_subscriptions.json"),
    (records) => void (records.gh = { secret: NEW_SECRET, deliver: "log" }),
  );
  const records: LogRecord[] = [];
  await startLogging({ extraSinks: [(record) => void records.push(record)] });
  const config = await loadConfig({ AGENT_HOME: h.home, HOME: "/nonexistent", ...llm.env });
  const gateway = await startGateway(config);
  try {
    const response = await fetch(`${gateway.url}/webhooks/gh`, await signedIssue(NEW_SECRET));
    await response.body?.cancel();
    assert.equal(response.status, 202);
    const delivered = await eventually(
      () => records.find((record) => record.rawMessage === "delivered to log"),
      { what: "the answer to reach the log target" },
    );
    assert.equal(
      delivered.properties.text,
      "The build failed because\n\n[answer cut off: the model reached its length limit]",
    );
    const warnings = records.filter((record) => record.level === "warning");
    assert.deepEqual(warnings.map((record) => [record.category.join("."), record.rawMessage]), [
      ["agent.worker", "the answer to {event_id} was cut off: the model reached its length limit"],
    ]);
  } finally {
    await gateway.stop({ deadlineMs: 0 });
    await stopLogging();
  }
});
