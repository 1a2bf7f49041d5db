/**
 * Watches that `state/gateway.db` is still the file the gateway opened. Deleted or replaced
 * while the gateway runs, it is a file nobody can open again: events acknowledged into it would
 * be lost. And SQLite, closing a database that has moved, leaves its write-ahead log (`-wal`,
 * `-shm`) in place, where the next connection to open the new file would read it as the new
 * file's log and corrupt it; so the watcher moves the old database's log aside at once.
 *
 * @module
 */
import { type FileIdentity, fileIdentity, sameFile } from "../lib/config/fs.ts";

/** What {@link watchStateFile} returns. */
export interface StateFileWatch {
  /** Why the database can no longer be written, once it was deleted or replaced. */
  gone(): string | undefined;
  /** Stops watching; waits for a check under way. */
  stop(): Promise<void>;
}

/**
 * Checks every `intervalMs` that `path` names the file it named at the start.
 * @param path the state database, `state/gateway.db`
 * @param options `intervalMs` between checks; `onGone` is called once, with the user-facing
 *   message, when the file was deleted or replaced
 * @returns the watch
 */
export function watchStateFile(
  path: string,
  options: { intervalMs: number; onGone: (message: string) => void },
): StateFileWatch {
  const database = fileIdentity(path);
  // The log files the database had when the gateway opened it. One that did not exist yet is
  // adopted when it appears (SQLite made it); a known one is never replaced by another found at
  // its path, which would be a restored backup's own log, put there before its database.
  const logs = new Map<string, FileIdentity | undefined>();
  const adoptLogs = () => {
    for (const suffix of ["-wal", "-shm"]) {
      if (logs.get(suffix) === undefined) logs.set(suffix, fileIdentity(path + suffix));
    }
  };
  adoptLogs();
  let gone: string | undefined;
  let checking: Promise<void> = Promise.resolve();

  const check = async () => {
    if (gone !== undefined) return;
    const now = fileIdentity(path);
    if (sameFile(now, database)) {
      gone = lostLog(path, logs);
      if (gone === undefined) return adoptLogs();
    } else {
      gone = replacedDatabase(path, {
        state: now === undefined ? "deleted" : "replaced",
        moved: await moveLogsAside(path, logs),
      });
    }
    options.onGone(gone);
  };
  // One check at a time: a check still moving the old logs aside must not be joined by the
  // next, which would find the file replaced too and report it again.
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    checking = check().finally(() => running = false);
  }, options.intervalMs);
  return {
    gone: () => gone,
    async stop() {
      clearInterval(timer);
      await checking;
    },
  };
}

/**
 * Why the gateway must stop when a log file the database had is gone or replaced, or undefined
 * when each is still its own. Writes go on into a log that is gone, which a crash would lose,
 * and a command that opens the database then makes a new one that does not know them. The
 * gateway closing the database writes what the log holds into it.
 */
function lostLog(path: string, logs: Map<string, FileIdentity | undefined>): string | undefined {
  const lost = [...logs].find(([suffix, ours]) =>
    ours !== undefined && !sameFile(fileIdentity(path + suffix), ours)
  );
  if (lost === undefined) return undefined;
  const [suffix] = lost;
  const state = fileIdentity(path + suffix) === undefined ? "deleted" : "replaced";
  return `${path}${suffix} was ${state} while the gateway ran. Exiting, ` +
    (suffix === "-wal"
      ? "so that no event is acknowledged into a log that is gone (requests get 503 until " +
        "then); the events in it are written into the database as the gateway closes it."
      : "so that no command opens the database without the gateway's index of its log " +
        "(the events accepted meanwhile are in the log, and kept).");
}

/** Why the gateway must stop when the database file is deleted or replaced. */
function replacedDatabase(
  path: string,
  { state, moved }: { state: "deleted" | "replaced"; moved: string[] },
): string {
  return `${path} was ${state} while the gateway ran. ` +
    "Exiting, so that no event is acknowledged into a file that is gone (requests get 503 " +
    "until then)" +
    (moved.length ? `; the old database's log was moved aside to ${moved.join(", ")}` : "") +
    ". The next start opens the database found there, or a new one.";
}

/** Renames the log files that are still the old database's; returns their new names. */
async function moveLogsAside(
  path: string,
  logs: Map<string, FileIdentity | undefined>,
): Promise<string[]> {
  const moved: string[] = [];
  const stamp = new Date().toISOString().replaceAll(":", "-");
  for (const [suffix, ours] of logs) {
    const current = fileIdentity(path + suffix);
    if (ours === undefined || current === undefined || !sameFile(current, ours)) continue;
    const aside = `${path}${suffix}.replaced-${stamp}`;
    try {
      await Deno.rename(path + suffix, aside);
      moved.push(aside);
    } catch {
      // Gone meanwhile, or the folder is not writable: nothing more can be done here.
    }
  }
  return moved;
}
