/**
 * What the parts of one SQLite state store share: the open database and its settings, the
 * runner that turns database failures into {@link StoreUnavailableError}, finding an event by
 * id or prefix, and the idempotency keys of delivery ids.
 *
 * @module
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import { ConflictError, NotFoundError, StoreUnavailableError, UsageError } from "../../errors.ts";
import { corruption, databaseErrorText } from "./_corruption.ts";
import type { Database } from "./_database.ts";
import type { Statements } from "./_statements.ts";
import { rowToEvent } from "../_rows.ts";
import type { StoredEvent } from "../mod.ts";

/** A row as `node:sqlite` returns it. */
export type Row = Record<string, unknown>;

/** A delivery id of a subscription: what an idempotency key is held for. */
export type DeliveryKey = { subscription: string; deliveryId: string };

/** One open store: what `openStateStore` builds and its parts share. */
export interface StoreCore {
  /** The database file, or `:memory:`. */
  readonly path: string;
  /** The open database. */
  readonly database: Database;
  /** Its connection. */
  readonly db: DatabaseSync;
  /** Its prepared statements. */
  readonly s: Statements;
  /** Runs a function between BEGIN IMMEDIATE and COMMIT (see {@link Database.transaction}). */
  readonly transaction: (run: () => void) => void;
  /** How long a delivery id is remembered, in ms. */
  readonly ttlMs: number;
  /** Clock for what the store timestamps itself, in ms since the epoch. */
  readonly clock: () => number;
  /** Event id generator. */
  readonly newId: () => string;
  /** Whether `close()` was called: every later call throws StoreUnavailableError. */
  closed: boolean;
  /** Tells `onCorrupt`, once, when a failure says the file is corrupt. */
  noteCorruption(error: unknown): void;
  /** Runs a synchronous call, reporting database failures as StoreUnavailableError. */
  use<T>(run: () => T): T;
  /**
   * The event with this id, or the one whose id starts with it.
   * @throws NotFoundError when the prefix matches several events
   */
  findEvent(idOrPrefix: string): StoredEvent | null;
  /** {@link findEvent}, throwing NotFoundError when nothing matches. */
  mustFind(idOrPrefix: string): StoredEvent;
  /** Runs an UPDATE of an event, throwing NotFoundError when it changed no row. */
  update(eventId: string, run: () => { changes: number | bigint }): void;
  /** The id of the event holding a delivery id's key unexpired at `nowMs`, if any. */
  liveKeyHolder(key: DeliveryKey, nowMs: number): string | undefined;
  /**
   * A delivered event that holds no key (a replayed direct message, recorded failed) takes its
   * delivery id's key, unless another event holds it unexpired: the sender's retry of that
   * delivery id is then a duplicate instead of a second copy of the message.
   */
  takeKey(event: DeliveryKey & { id: string }, nowMs: number): void;
}

/**
 * Builds the shared part of a store around an open database.
 * @param database the open database
 * @param settings `path`: the database file; `ttlMs`: how long a delivery id is remembered;
 *   `clock` and `newId`; `onCorrupt`: called once when SQLite reports the file corrupt
 * @returns the core, not closed
 */
export function createStoreCore(
  database: Database,
  settings: {
    path: string;
    ttlMs: number;
    clock: () => number;
    newId: () => string;
    onCorrupt?: (reason: string) => void;
  },
): StoreCore {
  const { path, ttlMs } = settings;
  const { statements: s } = database;
  const core: StoreCore = {
    path,
    database,
    db: database.db,
    s,
    transaction: database.transaction,
    ttlMs,
    clock: settings.clock,
    newId: settings.newId,
    closed: false,
    noteCorruption: corruptionNotice(settings.onCorrupt),
    use: (run) => use(core, run),
    findEvent: (idOrPrefix) => findEvent(s, idOrPrefix),
    mustFind(idOrPrefix) {
      const event = findEvent(s, idOrPrefix);
      if (!event) throw new NotFoundError(`No event "${idOrPrefix}"`);
      return event;
    },
    update(eventId, run) {
      if (Number(run().changes) === 0) throw new NotFoundError(`No event "${eventId}"`);
    },
    liveKeyHolder({ subscription, deliveryId }, nowMs) {
      const holder = s.keyHolder.get(subscription, deliveryId) as Row | undefined;
      return holder && Number(holder.key_expires_at) > nowMs ? String(holder.id) : undefined;
    },
    takeKey(event, nowMs) {
      if (core.liveKeyHolder(event, nowMs) !== undefined) return;
      s.releaseKey.run(event.subscription, event.deliveryId);
      s.setKey.run(nowMs + ttlMs, event.id);
    },
  };
  return core;
}

/** See {@link StoreCore.noteCorruption}. */
function corruptionNotice(onCorrupt?: (reason: string) => void): (error: unknown) => void {
  let corruptSeen = false;
  return (error) => {
    const reason = corruption(error);
    if (reason === undefined || corruptSeen) return;
    corruptSeen = true;
    onCorrupt?.(reason);
  };
}

/** See {@link StoreCore.use}. */
function use<T>(core: StoreCore, run: () => T): T {
  if (core.closed) throw new StoreUnavailableError("The state store is closed");
  try {
    return run();
  } catch (error) {
    if (
      error instanceof NotFoundError || error instanceof UsageError ||
      error instanceof ConflictError
    ) throw error;
    if (error instanceof StoreUnavailableError) throw error;
    core.noteCorruption(error);
    throw new StoreUnavailableError(
      `State database error: ${databaseErrorText(error, core.path)}`,
      { cause: error },
    );
  }
}

/** See {@link StoreCore.findEvent}. */
function findEvent(s: Statements, idOrPrefix: string): StoredEvent | null {
  const exact = s.byId.get(idOrPrefix) as Row | undefined;
  if (exact) return rowToEvent(exact);
  if (idOrPrefix === "") return null;
  const rows = s.byPrefix.all(idOrPrefix, idOrPrefix + "\uffff") as Row[];
  if (rows.length > 1) {
    const some = rows.map((row) => String(row.id)).join(", ");
    throw new NotFoundError(`Event id prefix "${idOrPrefix}" is ambiguous: ${some}, ...`);
  }
  return rows.length === 1 ? rowToEvent(rows[0]) : null;
}

/**
 * Statements of a store's module, prepared on a connection's first use of them: a module most
 * stores never use (coalescing, conversations, lineage) then prepares nothing.
 * @param sql each statement's SQL, by name
 * @returns the statements on a connection, prepared once per connection
 * @example
 * ```ts
 * const statements = preparedOnFirstUse({ folded: "SELECT * FROM events WHERE coalesced_into = ?" });
 * statements(core.db).folded.all(eventId);
 * ```
 */
export function preparedOnFirstUse<Name extends string>(
  sql: Readonly<Record<Name, string>>,
): (db: DatabaseSync) => Record<Name, StatementSync> {
  const prepared = new WeakMap<DatabaseSync, Record<Name, StatementSync>>();
  return (db) => {
    let found = prepared.get(db);
    if (found === undefined) {
      const entries = Object.entries<string>(sql).map(([name, text]) => [name, db.prepare(text)]);
      found = Object.fromEntries(entries) as Record<Name, StatementSync>;
      prepared.set(db, found);
    }
    return found;
  };
}
