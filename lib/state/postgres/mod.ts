/**
 * The PostgreSQL backend of the state store, for any number of gateways sharing one database
 * (docs/scaling.md): it implements `StateStore` as `lib/state/mod.ts` documents it, every method
 * answering with a promise ({@link StateStore}), through a pool of connections (npm
 * `postgres`).
 *
 * What sharing takes, beyond SQLite's behaviour:
 * - an idempotency key is a unique index over the rows that hold one, so one delivery id sent
 *   to two gateways at once makes one event: the second insert waits for the first and finds it;
 * - the worker claims due events with `FOR UPDATE SKIP LOCKED` under a lease of
 *   `leaseSeconds` that this store's heartbeat moves on; the events of a gateway that died are
 *   claimed again once their lease has ended, and each outcome write names its claim's token, so
 *   a run whose lease was lost records nothing (it rejects with ConflictError);
 * - each call runs on its own (committed when it resolves); several gateways' commits share the
 *   server's write-ahead log flushes.
 *
 * Every failure of the database (refused connection, a server shutting down, a full disk, a
 * read-only standby) rejects with `StoreUnavailableError`, which ingest answers with 503 and
 * `Retry-After`.
 *
 * @module
 */
import postgres from "postgres";
import { StoreUnavailableError } from "../../errors.ts";
import {
  createIdGenerator,
  cryptoRandom,
  type StateStore,
  type StateStoreOptions,
} from "../mod.ts";
import { acceptOps } from "./_accept.ts";
import { claimOps } from "./_claims.ts";
import { guardClientWrites } from "./_client_guard.ts";
import { coalesceOps } from "./_coalesce.ts";
import { createPgCore, query } from "./_core.ts";
import { createLeases } from "./_leases.ts";
import { NO_PRESENCE, type Presence, startPresence } from "./_presence.ts";
import { prune, replayOp } from "./_maintenance.ts";
import { readingOps } from "./_reading.ts";
import { createOrUpgradeSchema } from "./_schema.ts";
import { forgetTurns, sessionOps } from "./_sessions.ts";

export { SCHEMA_VERSION } from "./_schema.ts";
export type { StateStore };

/** Options of {@link openPostgresStore}: every backend's, and PostgreSQL's own. */
export interface PostgresStoreOptions extends StateStoreOptions {
  /** Most connections the pool opens to the server (`state.pool_size`). @default {10} */
  poolSize?: number;
  /**
   * How long a claim's lease lasts without a heartbeat, in seconds (`state.lease_seconds`): a
   * gateway's events are claimed again this long after it died. @default {30}
   */
  leaseSeconds?: number;
  /** How long opening a connection may take before the call fails, in seconds. @default {5} */
  connectTimeoutSeconds?: number;
  /**
   * The gateway's id, which its claims' leases name: a gateway started again with the same id
   * requeues its own interrupted runs at once (`recoverInterrupted`), not after their lease.
   * Two gateways running at once must never share one. @default {a random id per open}
   */
  gatewayId?: string;
  /**
   * The certificate (PEM) the server's must be, or be signed by: with it, connections use TLS
   * and check the server's certificate and its name (host name or IP address in the URL)
   * against it. Without it, the URL's `sslmode` decides (`require`: encrypted, unchecked).
   */
  tlsCaPem?: string;
  /**
   * Given by a gateway, not by a command: the store keeps the gateway's row in the `gateways`
   * table while it is open, and `ingest` says whether it takes webhooks; only those count in
   * `liveGateways()`, which per-subscription rate limits divide by. @default {no row}
   */
  gateway?: { ingest: boolean };
}

/**
 * Connects to the database named by `url`, creating its tables or upgrading those an older
 * version created (gateways starting together take turns).
 * @param url a PostgreSQL connection URL, `postgres://user:password@host:5432/name`, with
 *   `?sslmode=require` (or `verify-full`) for TLS; it is never put in a message or a log line
 * @param options see {@link PostgresStoreOptions}
 * @returns the store; close it with `close()`
 * @throws StoreUnavailableError when the URL is malformed, the server cannot be reached or
 *   refuses the login or the tables, or a newer version wrote them
 * @example The gateway's store
 * ```ts
 * const store = await openPostgresStore(Deno.env.get("DATABASE_URL")!, {
 *   poolSize: 10,
 *   leaseSeconds: 30,
 *   idempotencyTtlSeconds: 86_400,
 * });
 * const result = await store.accept(event);
 * await store.close();
 * ```
 */
export async function openPostgresStore(
  url: string,
  options: PostgresStoreOptions = {},
): Promise<StateStore> {
  const where = describe(url);
  let sql: postgres.Sql | undefined;
  const gatewayId = options.gatewayId ?? crypto.randomUUID();
  try {
    sql = postgres(url, connectionOptions(url, options));
    await createOrUpgradeSchema(sql);
    const presence = options.gateway === undefined ? NO_PRESENCE : await startPresence(sql, {
      id: gatewayId,
      ingests: options.gateway.ingest,
      leaseMs: leaseMsOf(options),
    });
    return storeOn(sql, { ...options, gatewayId, where, presence });
  } catch (cause) {
    await sql?.end({ timeout: 1 }).catch(() => {});
    const text = cause instanceof Error ? cause.message : String(cause);
    throw new StoreUnavailableError(`Cannot open the state database ${where}: ${text}`, { cause });
  }
}

/** How long a lease lasts, in ms. */
function leaseMsOf(options: PostgresStoreOptions): number {
  return Math.max(1, options.leaseSeconds ?? 30) * 1000;
}

/**
 * The client settings of every pool this program opens on the state database (the store's, and
 * the subscriptions' in `lib/subscriptions/postgres_source.ts`), so both reach it alike; the
 * first call also guards the process against the client's write on a closed connection.
 * @param url the connection URL (for the server's name that TLS checks)
 * @param options the pool size, connect timeout and CA certificate of {@link PostgresStoreOptions}
 * @returns the options of npm `postgres`
 */
export function connectionOptions(
  url: string,
  options: Pick<PostgresStoreOptions, "poolSize" | "connectTimeoutSeconds" | "tlsCaPem">,
): postgres.Options<Record<string, postgres.PostgresType>> {
  guardClientWrites();
  return {
    max: Math.max(1, Math.floor(options.poolSize ?? 10)),
    connect_timeout: options.connectTimeoutSeconds ?? 5,
    // The client waits longer before each new connection attempt while the server refuses
    // them, up to 20 s, and a request waits with it: a sender must get its 503 at once, so the
    // pause stays under half a second (a refused connection costs the server nothing).
    backoff: (retries: number) => Math.min(0.05 * retries, 0.5),
    onnotice: () => {},
    connection: { application_name: "agent-gateway" },
    ...(options.tlsCaPem === undefined ? {} : { ssl: tlsChecked(url, options.tlsCaPem) }),
  };
}

/** The store's methods on an open pool. */
function storeOn(
  sql: postgres.Sql,
  options: PostgresStoreOptions & { gatewayId: string; where: string; presence: Presence },
): StateStore {
  const clock = options.now ?? Date.now;
  const sessionTtlMs = (options.sessionTtlSeconds ?? 604_800) * 1000;
  const leaseMs = leaseMsOf(options);
  const { presence } = options;
  const leases = createLeases(leaseMs, async (tokens) => {
    await query(
      sql,
      "UPDATE events SET lease_expires_at = $1 WHERE status = 'running' " +
        "AND lease_token = ANY($2::text[])",
      [clock() + leaseMs, tokens],
    );
  });
  const core = createPgCore(sql, {
    where: options.where,
    ttlMs: (options.idempotencyTtlSeconds ?? 86_400) * 1000,
    clock,
    newId: options.newId ?? createIdGenerator(Date.now, cryptoRandom),
    ownerId: options.gatewayId,
    leases,
  });
  return {
    ...acceptOps(core),
    ...claimOps(core),
    ...readingOps(core),
    ...coalesceOps(core),
    ...sessionOps(core, { ttlMs: sessionTtlMs }),
    replay: replayOp(core),
    prune: (nowMs, pruning) =>
      core.use(async () => {
        const maxRows = pruning.maxRows ?? 1000;
        await forgetTurns(sql, nowMs - sessionTtlMs, maxRows);
        return await prune(sql, nowMs, { retentionDays: pruning.retentionDays, maxRows });
      }),
    liveGateways: presence.liveGateways,
    async close() {
      if (core.closed) return;
      core.closed = true;
      await core.settled();
      leases.stop();
      await presence.stop();
      await sql.end({ timeout: 5 });
    },
  };
}

/**
 * TLS that trusts only `caPem` and checks the server's name: node's check takes it from `host`,
 * as the client hands the connection over without a server name for an IP address.
 */
function tlsChecked(url: string, caPem: string): { ca: string; host: string } {
  return { ca: caPem, host: new URL(url).hostname.replace(/^\[|\]$/g, "") };
}

/**
 * Where a URL points, without its credentials, for messages: `host:port/name`.
 * @param url the connection URL
 * @returns `db.example.com:5432/agent`; `(state.url)` when the URL cannot be parsed
 */
export function describe(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.hostname}:${parsed.port || "5432"}${parsed.pathname || "/"}`;
  } catch {
    return "(state.url)";
  }
}
