/**
 * Direct delivery (docs/http.md): the rendered template goes to the target while the sender
 * waits, through the worker's delivery code and its held writes. The delivery id is recorded
 * only once the message went out, so the sender's retry of a failure goes through; a failure
 * records how many parts of a split message went out, and the retry resumes after them.
 *
 * @module
 */
import { errorMessage, TargetError } from "../errors.ts";
import type { DirectOutcome, NewEvent, PartReceipt } from "../state/mod.ts";
import type { SentPart } from "../targets/mod.ts";
import { describe, type WorkerCore } from "./_core.ts";
import { restStore } from "./_loop.ts";
import { jobFor, partReceipt } from "./_job.ts";

/** The key of a direct delivery: its subscription and delivery id. */
export const deliveryKey = (subscription: string, deliveryId: string): string =>
  `${subscription}\u0000${deliveryId}`;

/** Seconds a sender whose delivery id is being sent is asked to wait before its retry. */
const BUSY_RETRY_AFTER_SECONDS = 5;

/**
 * What became of a direct message: `delivered` (its `eventId` is null while the record is
 * held), `duplicate` (its delivery id was delivered already), `busy` (the same delivery id is
 * being sent right now, by the sender's earlier request or a replay: try again after
 * `retryAfterSeconds`), or `failed` (with the platform's wait, when it asked for one).
 */
export type DirectResult =
  | { status: "delivered"; eventId: string | null; target: string; parts: number }
  | { status: "duplicate" }
  | { status: "busy"; error: string; retryAfterSeconds: number }
  | {
    status: "failed";
    error: string;
    eventId: string | null;
    partsSent: number;
    retryAfterSeconds?: number;
  };

/**
 * Sends a direct message now; see {@link DirectResult}. Never throws for a failed delivery or a
 * database that refuses the record: the record is held and written once it takes writes.
 * @param worker the worker whose delivery and held writes are used
 * @param event the verified, rendered event, as it would be stored
 * @param payload the parsed JSON body, for targets that read it (a forge comment's issue)
 */
export async function deliverDirect(
  worker: WorkerCore,
  event: NewEvent,
  payload: unknown,
): Promise<DirectResult> {
  const key = deliveryKey(event.subscription, event.deliveryId);
  if (event.dedupe) {
    const earlier = await earlierDelivery(worker, event, key);
    if (earlier !== null) return earlier;
    // Checked after the store's answers, with nothing awaited before the message is marked as
    // being sent: two requests of one delivery id read the store at once, one of them sends.
    if (worker.directInFlight.has(key)) return busy("this delivery is already being sent");
  }
  worker.directInFlight.add(key);
  try {
    return await send(worker, { event, payload, key });
  } finally {
    worker.directInFlight.delete(key);
  }
}

/**
 * What a delivery id that may have been seen before answers: a duplicate, busy, or null to
 * send the message.
 */
async function earlierDelivery(
  worker: WorkerCore,
  event: NewEvent,
  key: string,
): Promise<DirectResult | null> {
  const { store } = worker.deps;
  const ttlMs = worker.idempotencyTtlMs;
  // Delivered while the database refused to record it: a duplicate all the same.
  if (worker.outcomes.delivered(key, event.receivedAtMs, ttlMs)) return { status: "duplicate" };
  // Any holder, its key expired or not: a replay that waited longer than the key's life is
  // still this message.
  const holder = await store.keyHolder(event.subscription, event.deliveryId);
  const held = holder === null ? null : await store.getEvent(holder);
  const live = held !== null &&
    await store.keyHolder(event.subscription, event.deliveryId, event.receivedAtMs) !== null;
  if (
    held?.mode === "direct" && (held.status === "queued" || held.status === "running") &&
    (!live || !(await store.wasDelivered(held.id)))
  ) {
    // A replay of this message may still fail (or, its key expired, would be sent twice): the
    // sender keeps its retry and comes back once that is settled.
    return busy("this delivery is being sent again by a replay");
  }
  if (live) return { status: "duplicate" };
  return null;
}

function busy(error: string): DirectResult {
  return { status: "busy", error, retryAfterSeconds: BUSY_RETRY_AFTER_SECONDS };
}

/** Sends the message, recording its progress, then its outcome. */
async function send(
  worker: WorkerCore,
  { event, payload, key }: { event: NewEvent; payload: unknown; key: string },
): Promise<DirectResult> {
  const partsAlreadySent = event.dedupe
    ? await worker.deps.store.partsSentByFailedAttempts(event)
    : 0;
  const progress = { partsSent: partsAlreadySent, id: undefined as string | undefined };
  // What the platform answered for each part, recorded with the outcome.
  const receipts: PartReceipt[] = [];
  // A message of several parts is on record from its first part on, its count kept up to date
  // before each next part, so that a crash in the middle does not make the sender's retry send
  // again what went out. While the store rests, the parts go out unrecorded.
  const onPartSent = async (sent: number, parts: number, part: SentPart) => {
    progress.partsSent = sent;
    receipts.push(partReceipt(part, { part: sent, parts, sentAtMs: worker.deps.now() }));
    if (sent < parts && !worker.outcomes.resting) {
      progress.id = await recordProgress(worker, event, progress);
    }
  };
  const job = { ...jobFor(event, event.prompt, payload), partsAlreadySent };
  try {
    const receipt = await worker.deps.deliver(job, onPartSent, { senderWaits: true });
    const outcome = {
      delivered: true,
      partsSent: receipt.parts,
      progressId: progress.id,
      receipts,
    };
    const eventId = await record(worker, { event, key, outcome });
    return { status: "delivered", eventId, target: receipt.target, parts: receipt.parts };
  } catch (error) {
    const reason = errorMessage(error);
    const { partsSent } = progress;
    const outcome = {
      delivered: false,
      error: reason,
      partsSent,
      progressId: progress.id,
      receipts,
    };
    const eventId = await record(worker, { event, key, outcome });
    // A platform's rate limit is passed on: the sender's retry waits as long as it asked.
    const retryAfterSeconds = error instanceof TargetError ? error.retryAfterSeconds : undefined;
    return { status: "failed", error: reason, eventId, partsSent, retryAfterSeconds };
  }
}

/**
 * Records the parts of a direct delivery sent so far. A refusal is logged and the store rests:
 * the delivery goes on, its progress recorded again once the rest is over (each refused write
 * may have held the event loop for the busy timeout), and its outcome still recorded at the end.
 * @returns the event that holds the progress (the one it had when the store refused)
 */
async function recordProgress(
  worker: WorkerCore,
  event: NewEvent,
  { partsSent, id }: { partsSent: number; id: string | undefined },
): Promise<string | undefined> {
  try {
    return await worker.deps.store.recordDirectProgress(event, partsSent, id);
  } catch (error) {
    worker.deps.log("warn", "could not record the parts sent of a direct delivery", {
      subscription: event.subscription,
      error: describe(error),
    });
    restStore(worker);
    return id;
  }
}

/**
 * Records a direct delivery's outcome, or holds the record while the store refuses it.
 * @returns the event id, or null while the record is held
 */
async function record(
  worker: WorkerCore,
  { event, key, outcome }: { event: NewEvent; key: string; outcome: DirectOutcome },
): Promise<string | null> {
  const atMs = worker.deps.now();
  let eventId: string | null = null;
  // A delivery without a delivery id of its own is never a duplicate: its own key.
  const heldKey = event.dedupe ? key : `${key}\u0000${worker.heldSequence++}`;
  const written = await worker.outcomes.recordNow(
    heldKey,
    async () => eventId = await worker.deps.store.recordDirect(event, { ...outcome, atMs }),
    outcome.delivered ? { deliveredAtMs: atMs } : {},
  );
  return written ? eventId : null;
}
