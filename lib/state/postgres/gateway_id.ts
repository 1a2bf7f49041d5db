/**
 * The id a home's gateway gives its claims on PostgreSQL when `state.gateway_id` names none: a
 * random id written once beside the home's state (`state/gateway_id`), so that the gateway,
 * started again on the same home, requeues its own cut-off runs at once rather than a lease
 * later (docs/scaling.md). Only the gateway that holds the home's lock (the one that runs the
 * worker) uses it: two gateways running at once never share it.
 *
 * @module
 */
import { dirname, join } from "node:path";

/**
 * Reads the home's gateway id, writing a new random one the first time.
 * @param stateDb the home's `state/gateway.db` path (its folder holds the id)
 * @returns the id: `gw-` and a random UUID
 * @throws Deno.errors.PermissionDenied (or another file error) when the folder cannot be written
 * @example
 * ```ts
 * const id = await homeGatewayId(config.paths.stateDb); // "gw-6f1c..."
 * ```
 */
export async function homeGatewayId(stateDb: string): Promise<string> {
  const file = join(dirname(stateDb), "gateway_id");
  const kept = (await Deno.readTextFile(file).catch(() => "")).trim();
  if (/^gw-[0-9a-f-]{36}$/.test(kept)) return kept;
  const id = `gw-${crypto.randomUUID()}`;
  await Deno.mkdir(dirname(file), { recursive: true, mode: 0o700 });
  await Deno.writeTextFile(file, `${id}\n`, { mode: 0o600 });
  return id;
}
