/**
 * Which gateways share the database now: each store writes its gateway's row in `gateways` when
 * it opens and every third of a lease after (the database's clock, so the gateways' clocks do
 * not matter here), deletes it when it closes, and counts the rows of the gateways that take
 * webhooks and were seen within a lease. Per-subscription rate limits divide by that count
 * (docs/scaling.md#rate-limits): a gateway that died stops counting a lease after its last beat.
 *
 * @module
 */
import type postgres from "postgres";
import { query } from "./_core.ts";

/** A gateway's presence in the database. */
export interface Presence {
  /**
   * The gateways that take webhooks and were seen within a lease, this one included when it
   * does, as last counted (at open, then at each beat); at least 1.
   */
  liveGateways(): number;
  /** Stops the beat and deletes this gateway's row (best effort: a lease ends it anyway). */
  stop(): Promise<void>;
}

/** The presence of a store that is no gateway's (a command's): no row, counted as one. */
export const NO_PRESENCE: Presence = { liveGateways: () => 1, stop: () => Promise.resolve() };

/**
 * Writes this gateway's row, counts the live ones, and beats every third of a lease.
 * @param sql the pool, its tables created
 * @param gateway `id`: the gateway's id; `ingests`: whether it takes webhooks; `leaseMs`: how
 *   long a row counts after its last beat
 * @returns the presence
 * @throws Error when the database refuses the first write
 */
export async function startPresence(
  sql: postgres.Sql,
  gateway: { id: string; ingests: boolean; leaseMs: number },
): Promise<Presence> {
  let live = 1;
  const beat = async () => {
    const [row] = await query(
      sql,
      "WITH me AS (INSERT INTO gateways (id, ingests, seen_at) VALUES ($1, $2, clock_timestamp()) " +
        "ON CONFLICT (id) DO UPDATE SET ingests = $2, seen_at = clock_timestamp() RETURNING id) " +
        "SELECT count(*) AS live FROM gateways WHERE ingests AND id <> $1 " +
        "AND seen_at > clock_timestamp() - $3 * interval '1 millisecond'",
      [gateway.id, gateway.ingests, gateway.leaseMs],
    );
    live = Math.max(1, Number(row?.live ?? 0) + (gateway.ingests ? 1 : 0));
  };
  await beat();
  let stopped = false;
  const timer = setInterval(() => {
    // A failed beat keeps the last count: the database may be restarting.
    beat().catch(() => {});
  }, Math.max(1, Math.floor(gateway.leaseMs / 3)));
  // The beat alone does not keep the process alive.
  Deno.unrefTimer(timer);
  return {
    liveGateways: () => live,
    async stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(timer);
      await query(sql, "DELETE FROM gateways WHERE id = $1", [gateway.id]).catch(() => {});
    },
  };
}
