/**
 * `state/gateway.lock`: the running gateway holds it (flock, exclusive) and writes where it
 * listens into it; commands read it to find the gateway, and a second gateway on the same home
 * refuses to start.
 *
 * @module
 */
import { dirname, join } from "node:path";
import { localUrl } from "../config/address.ts";
import { ConflictError, StoreUnavailableError } from "../errors.ts";
import { writeAll } from "../config/fs.ts";

/**
 * Writes where the CLI reaches this gateway into the lock file, for `webhook test` and
 * `gateway setup`: loopback when it listens on a wildcard address.
 */
export async function recordGatewayUrl(
  lock: Deno.FsFile,
  address: { hostname: string; port: number },
) {
  await writeAll(lock, new TextEncoder().encode(`${localUrl(address.hostname, address.port)}\n`));
}

/**
 * The local URL of the gateway running with this home (`http://127.0.0.1:8645`), as it wrote it
 * into `state/gateway.lock`; null when no gateway holds the lock (none runs).
 * @param stateDb the path of `state/gateway.db`
 */
export async function runningGatewayUrl(stateDb: string): Promise<string | null> {
  if (!(await gatewayRunning(stateDb))) return null;
  try {
    const text = (await Deno.readTextFile(join(dirname(stateDb), "gateway.lock"))).trim();
    return /^http:\/\/\S+$/.test(text) ? text : null;
  } catch {
    return null;
  }
}

/**
 * Whether a gateway runs with this home: one holds `state/gateway.lock`.
 * @param stateDb the path of `state/gateway.db`
 * @returns false too when the lock file cannot be read (never started here)
 */
export async function gatewayRunning(stateDb: string): Promise<boolean> {
  try {
    // A shared lock that can be taken means no gateway holds its exclusive one.
    using file = await Deno.open(join(dirname(stateDb), "gateway.lock"), { read: true });
    return !(await file.tryLock(false));
  } catch {
    return false; // never started here, or the folder is not readable
  }
}

/**
 * Takes `state/gateway.lock` (flock, exclusive) for as long as the gateway runs: a second
 * gateway on the same home would take over the events the first one is running (it requeues
 * every `running` event at start) and deliver them twice. The kernel drops the lock when the
 * process dies, even by `kill -9`.
 * @param stateDb the path of `state/gateway.db`; its folder is created (0700) when missing
 * @returns the open lock file: closing it releases the lock
 * @throws ConflictError when another gateway holds the lock
 * @throws StoreUnavailableError when the folder or the lock file cannot be created
 */
export async function lockGatewayState(stateDb: string): Promise<Deno.FsFile> {
  const folder = dirname(stateDb);
  const path = join(folder, "gateway.lock");
  let file: Deno.FsFile;
  try {
    await Deno.mkdir(folder, { recursive: true, mode: 0o700 });
    file = await Deno.open(path, { create: true, write: true, mode: 0o600 });
  } catch (error) {
    throw new StoreUnavailableError(`cannot open ${path}: ${(error as Error).message}`);
  }
  // A few tries: a command checking whether a gateway runs holds the lock for a moment.
  for (let attempt = 0; attempt < 5; attempt++) {
    if (await file.tryLock(true)) {
      // The last run's URL goes at once: until this run listens, nobody is to be sent there.
      try {
        await file.truncate(0);
      } catch (error) {
        file.close();
        throw new StoreUnavailableError(`cannot write ${path}: ${(error as Error).message}`);
      }
      return file;
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  file.close();
  throw new ConflictError(
    `another gateway is already running with ${folder} (it holds ${path}); stop it first, ` +
      "or give this one another AGENT_HOME",
  );
}
