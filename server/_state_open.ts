/**
 * The gateway's state at start: the home's lock and the state store its configuration names,
 * with the watch of SQLite's file.
 *
 * @module
 */
import type { Config } from "../lib/config/mod.ts";
import { lockGatewayState } from "../lib/state/gateway_lock.ts";
import type { StateStore } from "../lib/state/mod.ts";
import { openStateStore } from "../lib/state/open.ts";
import { homeGatewayId } from "../lib/state/postgres/gateway_id.ts";
import { corruptionAdvice } from "../lib/state/sqlite/mod.ts";
import { type StateFileWatch, watchStateFile } from "./_state_watch.ts";
import type { GatewayRoles } from "./gateway.ts";

/** How often the gateway checks that `state/gateway.db` is still the file it opened, in ms. */
export const STATE_CHECK_MS = 1000;

/** The state database, the lock that keeps a second gateway off the home and the watch of its file. */
export interface State {
  /** Held by a gateway that runs the worker (or, on SQLite, any gateway); else undefined. */
  lock: Deno.FsFile | undefined;
  store: StateStore;
  watch: StateFileWatch;
}

/** Nothing to watch: a PostgreSQL database is no file of the home. */
const NO_WATCH: StateFileWatch = { gone: () => undefined, stop: () => Promise.resolve() };

/**
 * Locks the home and opens the state store its configuration names (lib/state/open.ts). On
 * SQLite the gateway holds the home's lock, and a corrupt, deleted or replaced database file
 * settles `failed`. On PostgreSQL, gateways on other homes or hosts share the database, and an
 * ingest-only gateway may share this home: only a gateway that runs the worker takes the lock,
 * which keeps the home's agent processes its own.
 * @throws StoreUnavailableError when the database cannot be opened or reached
 * @throws ConfigError when `state.backend` is postgres and no URL names the database
 * @throws ConflictError when another gateway that holds the lock runs with the same home
 */
export async function openState(
  config: Config,
  { failed, roles }: { failed: PromiseWithResolvers<Error>; roles: GatewayRoles },
): Promise<State> {
  const { paths } = config;
  const sqlite = config.state.backend === "sqlite";
  const lock = sqlite || roles.worker ? await lockGatewayState(paths.stateDb) : undefined;
  try {
    if (!sqlite) {
      // The lock holder's id is the home's, so that it requeues its own cut-off runs at start.
      const id = lock ? await homeGatewayId(paths.stateDb) : undefined;
      const store = await openStateStore(config, { gateway: { ingest: roles.ingest, id } });
      return { lock, store, watch: NO_WATCH };
    }
    const store = await openStateStore(config, {
      sqlite: {
        // SQLite calls block the event loop: a lock held by another process (a CLI command) may
        // stall every request this long before the sender gets 503.
        busyTimeoutMs: 1000,
        // A corrupt file would serve 503 for ever, or take events it may not give back, without
        // a supervisor learning of it: the gateway stops, as when the file is replaced.
        onCorrupt: (reason) =>
          failed.resolve(
            new Error(
              `The state database is corrupt (${reason}). Stopping, so that no more events ` +
                `are acknowledged into it. ${corruptionAdvice(paths.stateDb)}`,
            ),
          ),
      },
    });
    const watch = watchStateFile(paths.stateDb, {
      intervalMs: STATE_CHECK_MS,
      onGone: (message) => failed.resolve(new Error(message)),
    });
    return { lock, store, watch };
  } catch (error) {
    lock?.close();
    throw error;
  }
}
