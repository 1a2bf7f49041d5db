/**
 * readBoundedText() on bodies cut short by their reader: by the byte bound, or by an abort.
 */
import assert from "node:assert/strict";
import { readBoundedText } from "../../../lib/targets/bounded_body.ts";

/** A body that sends `first` at once, then a byte every 10 ms until cancelled. */
function trickling(first: string): { body: Response; cancelled: () => boolean } {
  let cancelled = false;
  let timer: ReturnType<typeof setInterval>;
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode(first));
      timer = setInterval(() => controller.enqueue(new TextEncoder().encode("x")), 10);
    },
    cancel() {
      cancelled = true;
      clearInterval(timer);
    },
  });
  return { body: new Response(stream), cancelled: () => cancelled };
}

Deno.test("readBoundedText() rejects with the abort's reason, never a cut body called whole", async () => {
  const { body, cancelled } = trickling('{"partial":');
  const giveUp = new AbortController();
  setTimeout(() => giveUp.abort(new Error("run timed out")), 50);
  await assert.rejects(readBoundedText(body, 1_048_576, giveUp.signal), /run timed out/);
  assert.ok(cancelled(), "the rest of the body was cancelled");
});

Deno.test("readBoundedText() with a signal already aborted reads nothing", async () => {
  const { body, cancelled } = trickling("{}");
  await assert.rejects(
    readBoundedText(body, 1_048_576, AbortSignal.abort(new Error("stopped"))),
    /stopped/,
  );
  assert.ok(cancelled());
});

Deno.test("readBoundedText() stops at its bound and says the body is not whole", async () => {
  const { body, cancelled } = trickling("y".repeat(100));
  const { text, complete } = await readBoundedText(body, 50);
  assert.deepEqual([text, complete], ["y".repeat(50), false]);
  assert.ok(cancelled());
});
