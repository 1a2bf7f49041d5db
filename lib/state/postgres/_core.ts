/**
 * What the parts of one PostgreSQL state store share: the pool and its settings, the runner that
 * turns database failures into {@link StoreUnavailableError} and lets `close()` wait for the
 * calls under way, finding an event by id or prefix, and the idempotency keys of delivery ids.
 *
 * @module
 */
import type postgres from "postgres";
import { ConflictError, NotFoundError, StoreUnavailableError, UsageError } from "../../errors.ts";
import type { PartReceipt, StoredEvent } from "../mod.ts";
import type { Leases } from "./_leases.ts";
import { type Row, rowToEvent } from "../_rows.ts";

/** The pool, or a transaction of it: what a query runs on. */
export type Db = postgres.ISql;

/** A delivery id of a subscription: what an idempotency key is held for. */
export type DeliveryKey = { subscription: string; deliveryId: string };

/**
 * Runs one statement, prepared once per connection, with `$1`-style parameters.
 * @param db the pool or a transaction
 * @param text the statement
 * @param params its parameters, in order
 * @returns the rows, with `count`: how many rows it changed or returned
 */
export function query(
  db: Db,
  text: string,
  params: (string | number | boolean | null | string[])[] = [],
): Promise<postgres.RowList<Row[]>> {
  return db.unsafe<Row[]>(text, params as postgres.ParameterOrJSON<never>[], { prepare: true });
}

/** One open store: what `openPostgresStore` builds and its parts share. */
export interface PgCore {
  /** The pool. */
  readonly sql: postgres.Sql;
  /** Where the database is, without credentials: `host:port/name`, for messages. */
  readonly where: string;
  /** How long a delivery id is remembered, in ms. */
  readonly ttlMs: number;
  /** Clock for what the store timestamps itself and for heartbeats, in ms since the epoch. */
  readonly clock: () => number;
  /** Event id generator. */
  readonly newId: () => string;
  /** The gateway's id, the owner of its claims' leases. */
  readonly ownerId: string;
  /** The lease tokens of the events this store claimed, and their heartbeat. */
  readonly leases: Leases;
  /** Whether `close()` was called: every later call rejects with StoreUnavailableError. */
  closed: boolean;
  /**
   * Runs a call: rejects at once when the store is closed, reports database failures as
   * StoreUnavailableError (the errors the interface names pass through), and is awaited by
   * `close()`.
   */
  use<T>(run: () => Promise<T>): Promise<T>;
  /** Waits for every call under way. */
  settled(): Promise<void>;
}

/**
 * Builds the shared part of a store around an open pool.
 * @param sql the pool, its tables created
 * @param settings as {@link PgCore} names them
 * @returns the core, not closed
 */
export function createPgCore(
  sql: postgres.Sql,
  settings: Pick<PgCore, "where" | "ttlMs" | "clock" | "newId" | "ownerId" | "leases">,
): PgCore {
  const underway = new Set<Promise<unknown>>();
  const core: PgCore = {
    sql,
    ...settings,
    closed: false,
    use(run) {
      if (core.closed) {
        return Promise.reject(new StoreUnavailableError("The state store is closed"));
      }
      const call = run().catch((error) => {
        throw storeError(error, core.where);
      });
      underway.add(call);
      const forget = () => underway.delete(call);
      call.then(forget, forget);
      return call;
    },
    async settled() {
      await Promise.allSettled([...underway]);
    },
  };
  return core;
}

/** The error a call rejects with: the interface's own classes as they are, the rest unavailable. */
function storeError(error: unknown, where: string): Error {
  if (
    error instanceof NotFoundError || error instanceof UsageError ||
    error instanceof ConflictError || error instanceof StoreUnavailableError
  ) return error;
  const text = error instanceof Error ? error.message : String(error);
  return new StoreUnavailableError(`State database error (${where}): ${text}`, { cause: error });
}

/**
 * The event with this id, or the one whose id starts with it.
 * @throws NotFoundError when the prefix matches several events
 */
export async function findEvent(db: Db, idOrPrefix: string): Promise<StoredEvent | null> {
  const [exact] = await query(db, "SELECT * FROM events WHERE id = $1", [idOrPrefix]);
  if (exact) return rowToEvent(exact);
  if (idOrPrefix === "") return null;
  const rows = await query(
    db,
    "SELECT * FROM events WHERE id >= $1 AND id < $2 ORDER BY id LIMIT 3",
    [idOrPrefix, idOrPrefix + "\uffff"],
  );
  if (rows.length > 1) {
    const some = rows.map((row) => String(row.id)).join(", ");
    throw new NotFoundError(`Event id prefix "${idOrPrefix}" is ambiguous: ${some}, ...`);
  }
  return rows.length === 1 ? rowToEvent(rows[0]) : null;
}

/** {@link findEvent}, rejecting with NotFoundError when nothing matches. */
export async function mustFind(db: Db, idOrPrefix: string): Promise<StoredEvent> {
  const event = await findEvent(db, idOrPrefix);
  if (!event) throw new NotFoundError(`No event "${idOrPrefix}"`);
  return event;
}

/** The row that holds a delivery id's key (see `events_key` in `_schema.ts`). */
const KEY_HOLDER = "subscription = $1 AND delivery_id = $2 AND key_expires_at IS NOT NULL";

/**
 * The event holding a delivery id's key, expired or not.
 * @returns its id and when the key expires, in ms; undefined when no event holds it
 */
export async function keyHolder(
  db: Db,
  { subscription, deliveryId }: DeliveryKey,
): Promise<{ id: string; expiresAtMs: number } | undefined> {
  const [row] = await query(
    db,
    `SELECT id, key_expires_at FROM events WHERE ${KEY_HOLDER}`,
    [subscription, deliveryId],
  );
  return row && { id: String(row.id), expiresAtMs: Number(row.key_expires_at) };
}

/** The id of the event holding a delivery id's key unexpired at `nowMs`, if any. */
export async function liveKeyHolder(
  db: Db,
  key: DeliveryKey,
  nowMs: number,
): Promise<string | undefined> {
  const holder = await keyHolder(db, key);
  return holder && holder.expiresAtMs > nowMs ? holder.id : undefined;
}

/** Takes a delivery id's key from whichever event holds it, expired or not. */
export async function releaseKey(db: Db, { subscription, deliveryId }: DeliveryKey): Promise<void> {
  await query(db, `UPDATE events SET key_expires_at = NULL WHERE ${KEY_HOLDER}`, [
    subscription,
    deliveryId,
  ]);
}

/**
 * A delivered event that holds no key takes its delivery id's key, unless another event holds it
 * unexpired (as SQLite's `takeKey`), inside the caller's transaction.
 */
export async function takeKey(
  tx: Db,
  event: DeliveryKey & { id: string },
  settings: { nowMs: number; ttlMs: number },
): Promise<void> {
  if (await liveKeyHolder(tx, event, settings.nowMs) !== undefined) return;
  await releaseKey(tx, event);
  await query(tx, "UPDATE events SET key_expires_at = $1 WHERE id = $2", [
    settings.nowMs + settings.ttlMs,
    event.id,
  ]);
}

/**
 * Closes an event's latest attempt with its step and error (null: it succeeded).
 * @param db the caller's transaction
 */
export async function closeLastAttempt(
  db: Db,
  eventId: string,
  attempt: { nowMs: number; step: string; error: string | null },
): Promise<void> {
  await query(
    db,
    "UPDATE attempts SET finished_at = $1, step = $2, error = $3 " +
      "WHERE seq = (SELECT max(seq) FROM attempts WHERE event_id = $4)",
    [attempt.nowMs, attempt.step, attempt.error, eventId],
  );
}

/**
 * Records what the platforms answered for the parts of an event's message.
 * @param db the caller's transaction
 * @param eventId the event the parts belong to
 * @param receipts the parts' receipts, in the order they were sent; none when undefined
 */
export async function insertReceipts(
  db: Db,
  eventId: string,
  receipts: readonly PartReceipt[] | undefined,
): Promise<void> {
  for (const receipt of receipts ?? []) {
    await query(
      db,
      "INSERT INTO parts (event_id, part, parts, target, chat, message_id, url, sent_at) " +
        "VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
      [
        eventId,
        receipt.part,
        receipt.parts,
        receipt.target,
        receipt.chat,
        receipt.messageId,
        receipt.url,
        receipt.sentAtMs,
      ],
    );
  }
}
