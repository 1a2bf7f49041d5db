/**
 * `command` agents left running by a gateway that died (kill -9, out of memory). A `command`
 * agent runs in a session of its own (`own_session.ts`), so that a timeout or a stop can kill
 * what it started; that session outlives a gateway that dies without stopping it. The next start runs the event again, and the old program would work on it at
 * the same time (two comments, two commits). So while an agent runs, it is noted in
 * `state/agents/<pid>`, and the next start kills what is left of the noted runs.
 *
 * Killing the wrong process is worse than leaving one running, so a process is killed only
 * when it is provably the old agent's: it belongs to the noted session (the session id is the
 * agent's pid), in the same boot and the same pid namespace as the note, and it is either the
 * agent itself (the same start time, in clock ticks since boot) or carries the event id the
 * agent was started with (`AGENT_EVENT_ID` in its environment, which its children inherit).
 * A session id reused since by another program (after the old session ended: a daemon that
 * called setsid) matches neither. Linux only (`/proc`): elsewhere nothing is noted or killed.
 *
 * @module
 */
import { join } from "node:path";

/** Notes the running `command` agents. Its methods never throw. */
export interface AgentProcessNotes {
  /**
   * Notes an agent program that has just started.
   * @param pid its process id, which is also its session's id
   * @param eventId the event it runs for, as in its `AGENT_EVENT_ID`
   */
  started(pid: number, eventId: string): void;
  /** Forgets it once the run is over. */
  ended(pid: number): void;
}

/** What a note holds. */
interface Note {
  /** The agent's start time, in clock ticks since boot. */
  start: string;
  /** `/proc/sys/kernel/random/boot_id`: start times of another boot mean nothing. */
  boot: string;
  /** The pid namespace: pids of another (a restarted container) mean nothing. */
  namespace: string;
  eventId: string;
}

/**
 * Notes in `dir` (`state/agents`), created on first use with mode 0700.
 * @param dir the folder of notes
 * @returns the notes; on a system without `/proc`, ones that note nothing
 */
export function agentProcessNotes(dir: string): AgentProcessNotes {
  return {
    started(pid, eventId) {
      const start = startTime(pid);
      const here = machine();
      if (start === undefined || here === undefined) return;
      const note: Note = { start, ...here, eventId };
      try {
        Deno.mkdirSync(dir, { recursive: true, mode: 0o700 });
        Deno.writeTextFileSync(join(dir, String(pid)), JSON.stringify(note));
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
 * Kills what is left of the agents noted in `dir` by a gateway that died (see the module's
 * rules), and forgets every note. Call at start, after taking the gateway lock, so that no
 * running gateway's agents are noted there.
 * @param dir the folder of notes (`state/agents`)
 * @returns the process ids killed
 */
export function killLeftoverAgents(dir: string): number[] {
  const killed: number[] = [];
  let names: string[];
  try {
    names = [...Deno.readDirSync(dir)].map((entry) => entry.name);
  } catch {
    return killed; // none noted
  }
  const here = machine();
  const own = new Set([Deno.pid, ...sessionAndGroup(Deno.pid)]);
  for (const name of names) {
    const note = readNote(join(dir, name));
    const session = Number(name);
    if (
      note !== undefined && here !== undefined && note.boot === here.boot &&
      note.namespace === here.namespace && Number.isSafeInteger(session) && session > 1 &&
      !own.has(session)
    ) {
      for (const pid of membersOf(session)) {
        if (own.has(pid)) continue;
        const isAgent = pid === session && startTime(pid) === note.start;
        if (!isAgent && !carriesEvent(pid, note.eventId)) continue;
        try {
          Deno.kill(pid, "SIGKILL");
          killed.push(pid);
        } catch { /* ended meanwhile */ }
      }
    }
    try {
      Deno.removeSync(join(dir, name));
    } catch { /* gone meanwhile */ }
  }
  return killed;
}

function readNote(path: string): Note | undefined {
  try {
    const note = JSON.parse(Deno.readTextFileSync(path));
    return typeof note?.start === "string" && typeof note.boot === "string" &&
        typeof note.namespace === "string" && typeof note.eventId === "string"
      ? note
      : undefined;
  } catch {
    return undefined; // unreadable, or written by an earlier version: forgotten
  }
}

/** This boot and pid namespace; undefined without `/proc`. */
function machine(): { boot: string; namespace: string } | undefined {
  try {
    return {
      boot: Deno.readTextFileSync("/proc/sys/kernel/random/boot_id").trim(),
      namespace: Deno.readLinkSync("/proc/self/ns/pid"),
    };
  } catch {
    return undefined;
  }
}

/** The fields of `/proc/<pid>/stat` after the command name; undefined when there is none. */
function statFields(pid: number): string[] | undefined {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    // The command name, in parentheses, may hold spaces: count fields after its last ")".
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}

/** Start time of process `pid`, in clock ticks since boot (field 22 of its stat). */
function startTime(pid: number): string | undefined {
  return statFields(pid)?.[19];
}

/** The process group (field 5) and session (field 6) of process `pid`. */
function sessionAndGroup(pid: number): number[] {
  const fields = statFields(pid);
  return fields === undefined ? [] : [Number(fields[2]), Number(fields[3])];
}

/** The processes of session `session`. */
function membersOf(session: number): number[] {
  const members: number[] = [];
  try {
    for (const entry of Deno.readDirSync("/proc")) {
      const pid = Number(entry.name);
      if (!Number.isSafeInteger(pid)) continue;
      if (Number(statFields(pid)?.[3]) === session) members.push(pid);
    }
  } catch { /* no /proc to read: nothing is known, so nothing is killed */ }
  return members;
}

/** Whether process `pid` was started for event `eventId` (`AGENT_EVENT_ID` in its environment). */
function carriesEvent(pid: number, eventId: string): boolean {
  try {
    return Deno.readTextFileSync(`/proc/${pid}/environ`).split("\0").includes(
      `AGENT_EVENT_ID=${eventId}`,
    );
  } catch {
    return false;
  }
}
