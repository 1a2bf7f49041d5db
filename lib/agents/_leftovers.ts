/**
 * `command` agents left running by a gateway that died (kill -9, out of memory, a power cut of
 * the supervisor only). A `command` agent runs in a process group of its own, so that a timeout
 * or a stop can kill what it started; that group outlives a gateway that dies without stopping
 * it. The next start runs the event again, and the old program would work on it at the same
 * time (two comments, two commits). So while an agent runs, its process group is noted in
 * `state/agents/<pid>`, with the start time of its leader, and the next start kills the groups
 * still noted there.
 *
 * A process id can be taken by another process once the group is gone, so a noted group is
 * killed only when its leader is the same process (the same start time, in clock ticks since
 * boot, field 22 of `/proc/<pid>/stat`), or when no process has that id any more (then a
 * group with that id can only be the old one: Linux does not hand out an id that a process
 * group still uses). Linux only: elsewhere, without `/proc`, nothing is noted.
 *
 * @module
 */
import { join } from "node:path";

/** Notes the process groups of running `command` agents. Its methods never throw. */
export interface AgentProcessNotes {
  /** Notes the group of an agent program that has just started (its pid is the group's id). */
  started(pid: number): void;
  /** Forgets it once the run is over. */
  ended(pid: number): void;
}

/**
 * Notes in `dir` (`state/agents`), created on first use with mode 0700.
 * @param dir the folder of notes
 * @returns the notes; on a system without `/proc`, ones that note nothing
 */
export function agentProcessNotes(dir: string): AgentProcessNotes {
  return {
    started(pid) {
      const start = startTime(pid);
      if (start === undefined) return;
      try {
        Deno.mkdirSync(dir, { recursive: true, mode: 0o700 });
        Deno.writeTextFileSync(join(dir, String(pid)), start);
      } catch { /* best effort: a full disk must not fail the run */ }
    },
    ended(pid) {
      try {
        Deno.removeSync(join(dir, String(pid)));
      } catch { /* never noted, or already gone */ }
    },
  };
}

/**
 * Kills the process groups of the agents noted in `dir` by a gateway that died, and forgets
 * every note. Call at start, after taking the gateway lock (so no other gateway's agents are
 * noted there).
 * @param dir the folder of notes (`state/agents`)
 * @returns the process ids of the groups killed
 */
export function killLeftoverAgents(dir: string): number[] {
  const killed: number[] = [];
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(dir)];
  } catch {
    return killed; // none noted
  }
  for (const entry of entries) {
    const pid = Number(entry.name);
    const path = join(dir, entry.name);
    let noted = "";
    try {
      noted = Deno.readTextFileSync(path).trim();
    } catch { /* unreadable: forget it */ }
    const now = startTime(pid);
    if (
      Number.isSafeInteger(pid) && pid > 1 && noted !== "" && (now === undefined || now === noted)
    ) {
      try {
        Deno.kill(-pid, "SIGKILL");
        killed.push(pid);
      } catch { /* the group is gone */ }
    }
    try {
      Deno.removeSync(path);
    } catch { /* gone meanwhile */ }
  }
  return killed;
}

/** The start time of process `pid` in clock ticks since boot; undefined without one (or /proc). */
function startTime(pid: number): string | undefined {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    // The command name, in parentheses, may hold spaces: count fields after its last ")".
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}
