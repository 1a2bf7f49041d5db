/**
 * What retention's pruning leaves in the SQLite backend's files: no trace of a pruned payload,
 * and a WAL that does not grow with the batches.
 *
 * @module
 */
import assert from "node:assert/strict";
import { openStateStore } from "../../../../lib/state/sqlite/mod.ts";
import { newEvent } from "../_fixtures.ts";
import { tempHome } from "./_fixtures.ts";

const T0 = 1_700_000_000_000;

Deno.test("a pruned payload is gone from the database file, not left in its free space", async () => {
  const home = await tempHome();
  try {
    const store = openStateStore(home.dbPath, { backgroundCheckpoints: false });
    const marker = "card-4242424242424242-of-a-customer";
    // 21 KB, as a real GitHub payload: most of it on overflow pages, which are freed whole.
    const payload = JSON.stringify({ note: marker.repeat(600) });
    const id = (await store.accept(newEvent({ payload, receivedAtMs: T0 }))).eventId!;
    await store.claimDue(T0, 1);
    await store.markDelivered(id, T0 + 1);
    assert.deepEqual(await store.prune(T0 + 8 * 86_400_000, { retentionDays: 7 }), { events: 1 });
    await store.close(); // checkpoints the WAL into the file
    const bytes = new TextDecoder("latin1").decode(await Deno.readFile(home.dbPath));
    assert.equal(bytes.includes(marker), false);
  } finally {
    await home.cleanup();
  }
});

Deno.test("a pruned event's headers, agent answer and message ids go from the file with it", async () => {
  const home = await tempHome();
  try {
    const store = openStateStore(home.dbPath, { backgroundCheckpoints: false });
    const marker = (what: string) => `${what}-marker-of-a-pruned-event`;
    const headers = { "user-agent": marker("header") };
    const id = (await store.accept(newEvent({ receivedAtMs: T0, headers }))).eventId!;
    await store.claimDue(T0, 1);
    const run = {
      provider: "openai",
      model: marker("model"),
      promptTokens: 1,
      completionTokens: 1,
    };
    await store.saveResponse(id, marker("answer"), { ...run, durationMs: 1 });
    const receipt = { part: 1, parts: 1, target: "telegram", chat: "42", url: null, sentAtMs: T0 };
    await store.savePartsSent(id, 1, {
      sentBefore: 0,
      parts: 1,
      receipts: [{ ...receipt, messageId: marker("message") }],
    });
    await store.markDelivered(id, T0 + 1);
    assert.deepEqual(await store.prune(T0 + 8 * 86_400_000, { retentionDays: 7 }), { events: 1 });
    await store.close();
    const bytes = new TextDecoder("latin1").decode(await Deno.readFile(home.dbPath));
    for (const what of ["header", "model", "answer", "message"]) {
      assert.equal(bytes.includes(marker(what)), false, `the ${what} is left in the file`);
    }
  } finally {
    await home.cleanup();
  }
});

Deno.test("pruning many events in a row does not grow the WAL past its size limit", async () => {
  const home = await tempHome();
  try {
    const store = openStateStore(home.dbPath);
    const payload = JSON.stringify({ body: "x".repeat(8000) });
    for (let i = 0; i < 8000; i += 200) {
      await Promise.all(Array.from({ length: 200 }, (_, k) =>
        store.recordDirect(
          newEvent({ mode: "direct", payload, receivedAtMs: T0 + i + k }),
          { delivered: true, partsSent: 1 },
        )));
    }
    const walBytes = () => Deno.statSync(`${home.dbPath}-wal`).size;
    let largest = 0;
    let pruned = 0;
    for (let events = -1; events !== 0;) {
      ({ events } = await store.prune(T0 + 30 * 86_400_000, { retentionDays: 7, maxRows: 250 }));
      pruned += events;
      largest = Math.max(largest, walBytes());
    }
    await store.close();
    assert.equal(pruned, 8000);
    // The rows deleted, their pages zeroed (secure_delete), are more than the limit: batches
    // that outran the checkpoints would pile them up in the WAL. The file is cut back to 64 MiB
    // when the WAL starts over (the inserts above left it larger), and each batch starts it over.
    assert.ok(largest <= 68 * 1_048_576, `the WAL reached ${largest} bytes`);
  } finally {
    await home.cleanup();
  }
});
