/**
 * Receiving request bodies safely, the "size" step of docs/http.md: a size limit enforced on
 * Content-Length and while reading (chunked bodies), a deadline for the whole body, and a budget
 * of the bytes being received at once. Parsing is in `_payload.ts`.
 *
 * @module
 */

/**
 * Why a body was refused; `status` is the HTTP answer (503: {@link BodyBudget} is spent).
 * The ingest pipeline turns it into a `Refusal` (see `refusalOf`).
 */
export class BodyError extends Error {
  readonly status: 400 | 408 | 413 | 503;
  constructor(status: 400 | 408 | 413 | 503, message: string) {
    super(message);
    this.name = "BodyError";
    this.status = status;
  }
}

/** How long a sender may take to send a whole body, in milliseconds. @default {30000} */
export const BODY_TIMEOUT_MS = 30_000;

/**
 * Deadlines for request bodies, kept with one shared timer instead of one timer per request,
 * which would slow the ingest path. The timer runs only while a body is being read. Deadlines
 * follow a steady clock: the system clock set forward an hour must not cut off every body being
 * received, nor set back give senders an hour more.
 */
export class BodyDeadlines {
  readonly #timeoutMs: number;
  readonly #pending = new Set<{ atMs: number; expire: () => void }>();
  #timer: ReturnType<typeof setInterval> | undefined;

  /** @param timeoutMs the time allowed for a whole body, in milliseconds @default {30000} */
  constructor(timeoutMs: number = BODY_TIMEOUT_MS) {
    this.#timeoutMs = timeoutMs;
  }

  /**
   * Starts the clock for one body.
   * @param onExpire called once at the deadline (within a tenth of the timeout), unless `done`
   *   was called first
   * @returns `done`, to call when the body is in (or refused)
   */
  watch(onExpire: () => void): () => void {
    const entry = { atMs: performance.now() + this.#timeoutMs, expire: onExpire };
    this.#pending.add(entry);
    this.#timer ??= setInterval(() => this.#sweep(), Math.max(10, this.#timeoutMs / 10));
    return () => this.#pending.delete(entry);
  }

  /** The 408 of a body that missed its deadline. */
  expiredError(): BodyError {
    return new BodyError(408, `request body not received within ${this.#timeoutMs / 1000} s`);
  }

  #sweep(): void {
    const nowMs = performance.now();
    for (const entry of this.#pending) {
      if (entry.atMs > nowMs) continue;
      this.#pending.delete(entry);
      entry.expire();
    }
    if (this.#pending.size === 0) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }
}

/** The least {@link BodyBudget} a gateway gets: 32 MiB. */
export const MIN_BODY_BUDGET_BYTES = 32 * 1024 * 1024;

/**
 * The bytes of request bodies being received at once, over every request and connection.
 * A body reserves its declared size (a chunked one: its chunks as they arrive) and keeps it
 * until reading ends (the whole body read, or refused at its 408, 413 or 503); a body that would
 * take the total past the budget is refused with 503 (the sender retries later). So senders
 * that never finish their bodies, over many connections or many HTTP/2 streams, cannot make the
 * gateway hold memory without bound.
 */
export class BodyBudget {
  /** The budget, in bytes. */
  readonly maxBytes: number;
  #reserved = 0;

  /**
   * @param maxBodyBytes the largest body accepted
   * @param maxBytes the budget @default {four times `maxBodyBytes`, and at least
   *   {@link MIN_BODY_BUDGET_BYTES}, so several of the largest bodies fit at once}
   */
  constructor(maxBodyBytes: number, maxBytes?: number) {
    this.maxBytes = maxBytes ?? Math.max(MIN_BODY_BUDGET_BYTES, 4 * maxBodyBytes);
  }

  /**
   * Reserves `bytes` if they fit.
   * @returns false, reserving nothing, when they would take the total past the budget
   */
  reserve(bytes: number): boolean {
    if (this.#reserved + bytes > this.maxBytes) return false;
    this.#reserved += bytes;
    return true;
  }

  /** Gives back bytes reserved earlier. */
  release(bytes: number): void {
    this.#reserved = Math.max(0, this.#reserved - bytes);
  }
}

/**
 * The body's declared size, checked before anything is read.
 * @param request the incoming request
 * @param maxBytes the largest body accepted, in bytes
 * @returns the Content-Length, or null when there is none (a chunked body, or no body)
 * @throws BodyError 400 for a Content-Length that is not a number, 413 for one over `maxBytes`
 */
export function declaredLength(request: Request, maxBytes: number): number | null {
  const declared = request.headers.get("content-length");
  if (declared === null) return null;
  const length = Number(declared);
  if (!/^\d+$/.test(declared.trim()) || !Number.isSafeInteger(length)) {
    throw new BodyError(400, "invalid Content-Length");
  }
  if (length > maxBytes) throw tooLarge(maxBytes);
  return length;
}

/**
 * Reads the raw body, refusing it as soon as it is known to be larger than `maxBytes`, when it
 * does not fit in what `budget` has left, or when it has not fully arrived by its deadline (a
 * sender that stalls must not hold a request, and a graceful stop, for ever).
 *
 * A body with a Content-Length reserves it whole before it is read; a chunked one reserves its
 * chunks as they arrive. So a sender that declares a body and never sends it holds its declared
 * size until its 408. Whatever ends the read early (408, 413, 503, a broken stream), the body is
 * cancelled and its bytes given back at once.
 * @param request the incoming request
 * @param maxBytes the largest body accepted, in bytes
 * @param limits `deadlines`: the shared body deadlines (30 s when omitted); `budget`: the
 *   shared budget of bytes being received (unbounded when omitted)
 * @returns the body bytes (empty for no body)
 * @throws BodyError 400 for a Content-Length that is not a number or a stream that breaks, 413
 *   when too large (Content-Length or counted), 503 when over the budget, 408 when too slow
 * @example
 * ```ts
 * const deadlines = new BodyDeadlines(30_000);
 * const budget = new BodyBudget(1_048_576);
 * const body = await readBody(request, 1_048_576, { deadlines, budget });
 * ```
 */
export async function readBody(
  request: Request,
  maxBytes: number,
  limits: { deadlines?: BodyDeadlines; budget?: BodyBudget } = {},
): Promise<Uint8Array> {
  const declared = declaredLength(request, maxBytes);
  if (!request.body) return new Uint8Array();
  const { budget } = limits;
  // A declared body that does not fit is refused unread: the server then does not take it in
  // (an HTTP/2 sender keeps it, for want of flow-control credit), where reserving only what
  // had arrived would let every stream of a flood start reading at once.
  if (budget && declared !== null && !budget.reserve(declared)) throw new BodyError(503, BUSY);
  const held = budget ? declared ?? 0 : 0;
  const reading: Reading = { maxBytes, declared, budget, held, expired: false };
  let reader: ReadableStreamDefaultReader<Uint8Array>;
  try {
    reader = request.body.getReader();
  } catch {
    budget?.release(reading.held);
    throw unreadable();
  }
  const deadlines = limits.deadlines ?? new BodyDeadlines();
  // At the deadline the read is cancelled: the pending read() then ends, and the loop sees why.
  const done = deadlines.watch(() => {
    reading.expired = true;
    reader.cancel().catch(() => {});
  });
  try {
    return await readChunks(reader, reading, deadlines);
  } catch (error) {
    // Nothing more of this body is wanted: the server stops receiving it.
    reader.cancel().catch(() => {});
    if (error instanceof BodyError) throw error;
    if (reading.expired) throw deadlines.expiredError();
    throw unreadable();
  } finally {
    done();
    budget?.release(reading.held);
  }
}

/** A body being read, and what it holds of the budget. */
interface Reading {
  /** The largest body accepted, in bytes. */
  maxBytes: number;
  /** The Content-Length, or null for a chunked body. */
  declared: number | null;
  budget?: BodyBudget;
  /** Bytes reserved from the budget, given back when reading ends. */
  held: number;
  /** Whether the body's deadline passed. */
  expired: boolean;
}

/**
 * Reads the chunks of a body into one buffer (of the declared size, or doubling for a chunked
 * body). A chunk is a view of a larger buffer of the server's: keeping the chunks would keep
 * those buffers, and a sender trickling a few bytes per write would make each byte cost
 * kilobytes.
 * @throws BodyError 413 past `maxBytes`, 503 past the budget, 408 past the deadline
 */
async function readChunks(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  reading: Reading,
  deadlines: BodyDeadlines,
): Promise<Uint8Array> {
  const { maxBytes, declared, budget } = reading;
  let body = new Uint8Array(declared ?? Math.min(maxBytes, 4096));
  let total = 0;
  while (true) {
    const { done, value } = await reader.read();
    if (reading.expired) throw deadlines.expiredError();
    if (done) break;
    if (total + value.byteLength > maxBytes) throw tooLarge(maxBytes);
    // A chunked body (no Content-Length) is reserved chunk by chunk as it arrives.
    if (budget && declared === null) {
      if (!budget.reserve(value.byteLength)) throw new BodyError(503, BUSY);
      reading.held += value.byteLength;
    }
    if (total + value.byteLength > body.length) {
      // Only a chunked body grows (the server holds a declared one to its Content-Length).
      const grown = new Uint8Array(
        Math.min(maxBytes, Math.max(2 * body.length, total + value.byteLength)),
      );
      grown.set(body.subarray(0, total));
      body = grown;
    }
    body.set(value, total);
    total += value.byteLength;
  }
  return total === body.length ? body : body.subarray(0, total);
}

const BUSY = "too many request bodies are being received at once; retry later";

function tooLarge(maxBytes: number): BodyError {
  return new BodyError(413, `body larger than ${maxBytes} bytes`);
}

function unreadable(): BodyError {
  return new BodyError(400, "the request body could not be read");
}
