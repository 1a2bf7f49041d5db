/**
 * Reading and parsing request bodies safely: a size limit enforced on Content-Length and while
 * reading (chunked bodies), strict UTF-8, a nesting-depth limit before `JSON.parse`, and
 * GitHub's form mode (CONTRACT §4 "size" and "parse" steps).
 *
 * @module
 */

/** Why a body was refused; `status` is the HTTP answer (503: {@link BodyBudget} is spent). */
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
 * Deadlines for request bodies, kept with one shared timer instead of one timer per request
 * (a per-request `setTimeout` measurably slows the ingest path). The timer runs only while a
 * body is being read. Deadlines follow a steady clock: the system clock set forward an hour
 * must not cut off every body being received, nor set back give senders an hour more.
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
 * take the total past the budget is refused with 503 (the sender retries later). Without it,
 * senders that never finish their bodies (a thousand HTTP/1.1 connections, or one HTTP/2
 * connection with hundreds of streams) made the gateway hold gigabytes for bodies it would
 * never use.
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
 * size until its 408 (30 s). Whatever ends the read early (408, 413, 503, a broken stream), the
 * body is cancelled and its bytes given back at once.
 *
 * Each chunk is copied into one buffer (of the declared size, or doubling for a chunked body):
 * a chunk is a view of a 64 KiB buffer of the server's, and keeping the chunks kept those
 * buffers, so a sender trickling a few bytes per write made each byte cost kilobytes (30
 * senders of 1 byte per 20 ms grew the gateway from 85 to 837 MB in 12 s). Measured on the
 * 2-core machine with 2 KB bodies, reading chunks costs no more than `arrayBuffer()`: 25 to
 * 33 µs of event loop per request against 27 to 38.
 * @param request the incoming request
 * @param maxBytes the largest body accepted, in bytes
 * @param limits `deadlines`: the shared body deadlines (30 s when omitted); `budget`: the
 *   shared budget of bytes being received (unbounded when omitted)
 * @returns the body bytes (empty for no body)
 * @throws BodyError 400 for a Content-Length that is not a number or a stream that breaks, 413
 *   when too large (Content-Length or counted), 503 when over the budget, 408 when too slow
 */
export async function readBody(
  request: Request,
  maxBytes: number,
  limits: { deadlines?: BodyDeadlines; budget?: BodyBudget } = {},
): Promise<Uint8Array> {
  const length = declaredLength(request, maxBytes);
  if (!request.body) return new Uint8Array();
  const { budget } = limits;
  // A declared body is reserved whole before anything of it is read, and one that does not fit
  // is refused unread: the server then does not take it in (an HTTP/2 sender keeps it, for want
  // of flow-control credit). Reserving only what had arrived let every stream of a flood start
  // reading at once, and the gateway held 411 MB for 1,000 streams of 1 MiB, 536 MB for 2,000,
  // against 213 and 218 MB this way.
  if (budget && length !== null && !budget.reserve(length)) throw new BodyError(503, BUSY);
  let held = budget && length !== null ? length : 0; // reserved from the budget
  let reader: ReadableStreamDefaultReader<Uint8Array>;
  try {
    reader = request.body.getReader();
  } catch {
    budget?.release(held);
    throw new BodyError(400, "the request body could not be read");
  }
  const deadlines = limits.deadlines ?? new BodyDeadlines();
  let expired = false;
  // At the deadline the read is cancelled: the pending read() then ends, and the loop sees why.
  const done = deadlines.watch(() => {
    expired = true;
    reader.cancel().catch(() => {});
  });
  let body = new Uint8Array(length ?? Math.min(maxBytes, 4096));
  let total = 0;
  try {
    while (true) {
      const { done: end, value } = await reader.read();
      if (expired) throw deadlines.expiredError();
      if (end) break;
      if (total + value.byteLength > maxBytes) throw tooLarge(maxBytes);
      // A chunked body (no Content-Length) is reserved chunk by chunk as it arrives.
      if (budget && length === null) {
        if (!budget.reserve(value.byteLength)) throw new BodyError(503, BUSY);
        held += value.byteLength;
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
  } catch (error) {
    // Nothing more of this body is wanted: the server stops receiving it.
    reader.cancel().catch(() => {});
    if (error instanceof BodyError) throw error;
    if (expired) throw deadlines.expiredError();
    throw new BodyError(400, "the request body could not be read");
  } finally {
    done();
    budget?.release(held);
  }
  return total === body.length ? body : body.subarray(0, total);
}

const BUSY = "too many request bodies are being received at once; retry later";

function tooLarge(maxBytes: number): BodyError {
  return new BodyError(413, `body larger than ${maxBytes} bytes`);
}

/** Deepest nesting of arrays and objects accepted in a JSON body. */
export const MAX_JSON_DEPTH = 64;

const utf8 = new TextDecoder();
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Parses a verified body into a payload: JSON, or a form (`application/x-www-form-urlencoded`)
 * whose `payload` field is JSON (GitHub's form mode) or whose fields become an object (Slack's
 * slash commands), as far as `options.forms` allows. A body that starts with `{` or `[` is JSON
 * whatever its Content-Type says: `curl -d '{...}'`, as many monitoring scripts send it, labels
 * it a form, and read as one it became a single field named after the whole JSON text.
 * @param body the raw bytes
 * @param contentType the request's Content-Type, or null
 * @param options `forms`: `any` (@default), `payload` (only a form whose one field is
 *   `payload`), or `none` (JSON only); the caller narrows it by signature scheme
 * @returns the parsed payload, and its JSON text (the body itself for JSON bodies, so it is
 *   stored byte for byte as received)
 * @throws BodyError 400 for an empty body, invalid UTF-8, invalid JSON, nesting deeper than
 *   {@link MAX_JSON_DEPTH}, or a form that is not allowed
 */
export function parsePayload(
  body: Uint8Array,
  contentType: string | null,
  options: { forms?: "any" | "payload" | "none" } = {},
): { value: unknown; json: string } {
  if (body.byteLength === 0) throw new BodyError(400, "empty body: expected a JSON payload");
  const text = utf8.decode(body);
  // The lenient decoder is ten times faster; only a text with U+FFFD can hide invalid bytes.
  if (text.includes("\uFFFD")) {
    try {
      strictUtf8.decode(body);
    } catch {
      throw new BodyError(400, "body is not valid UTF-8");
    }
  }
  const mediaType = contentType?.split(";")[0].trim().toLowerCase() ?? "";
  if (mediaType === "application/x-www-form-urlencoded" && !JSON_START.test(text)) {
    // URLSearchParams turns a percent-encoded invalid sequence (%FF) into U+FFFD; the strict
    // decoder refuses it, as the raw body's bytes are refused above.
    if (text.includes("%") && !isStrictFormUtf8(text)) {
      throw new BodyError(400, "form body is not valid UTF-8 once percent-decoded");
    }
    const form = new URLSearchParams(text);
    const payload = form.get("payload");
    const forms = options.forms ?? "any";
    if (forms === "none") throw new BodyError(400, "a body signed this way must be JSON");
    const onlyPayload = payload !== null && [...form.keys()].every((key) => key === "payload");
    if (!onlyPayload && forms === "payload") {
      throw new BodyError(
        400,
        "a form body signed this way must hold the JSON payload in a payload field alone",
      );
    }
    if (payload !== null) {
      return { value: parseJson(payload, "the form field payload"), json: payload };
    }
    const fields = Object.fromEntries(form);
    return { value: fields, json: JSON.stringify(fields) };
  }
  return { value: parseJson(text, mediaType ? `body (${mediaType})` : "body"), json: text };
}

/** The start of a JSON object or array; no form field a sender builds starts this way. */
const JSON_START = /^\s*[[{]/;

/**
 * True when the percent-encoded bytes of a form body decode as UTF-8. A `%` not followed by two
 * hex digits is literal text, as URLSearchParams reads it.
 */
function isStrictFormUtf8(text: string): boolean {
  for (const pair of text.split("&")) {
    try {
      decodeURIComponent(pair.replace(STRAY_PERCENT, "%25"));
    } catch {
      return false;
    }
  }
  return true;
}

const STRAY_PERCENT = /%(?![0-9a-fA-F]{2})/g;

function parseJson(text: string, what: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new BodyError(400, `${what} is not valid JSON`);
  }
  if (tooDeep(value)) {
    throw new BodyError(400, `${what} is nested deeper than ${MAX_JSON_DEPTH} levels`);
  }
  return value;
}

/**
 * True when arrays and objects nest deeper than {@link MAX_JSON_DEPTH}. Walks the parsed
 * value with an explicit stack (V8's `JSON.parse` is iterative, so parsing a deep body is
 * safe; recursive code after it, like `JSON.stringify`, would not be).
 */
function tooDeep(root: unknown): boolean {
  const stack: [unknown, number][] = [[root, 0]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop()!;
    if (value === null || typeof value !== "object") continue;
    if (depth >= MAX_JSON_DEPTH) return true;
    for (const child of Array.isArray(value) ? value : Object.values(value)) {
      if (child !== null && typeof child === "object") stack.push([child, depth + 1]);
    }
  }
  return false;
}
