import assert from "node:assert/strict";
import { join } from "node:path";
import { agentProcessNotes, killLeftoverAgents } from "../../../lib/agents/_leftovers.ts";
import { eventually, processExited } from "../../_helpers.ts";

/** A program in a session of its own, as the command runner starts agents. */
function startDetached(script: string, env: Record<string, string>): Deno.ChildProcess {
  return new Deno.Command("sh", { args: ["-c", script], detached: true, env, stdout: "null" })
    .spawn();
}

/** The folder of notes in a new temporary directory, removed by `await using`. */
async function notesFolder() {
  const parent = await Deno.makeTempDir();
  return {
    dir: join(parent, "agents"),
    /** Where a test's agent writes the pid of its child. */
    pidFile: join(parent, "child.pid"),
    [Symbol.asyncDispose]: () => Deno.remove(parent, { recursive: true }),
  };
}

Deno.test("killLeftoverAgents() kills the noted agent and what it started, though a child left its process group", async () => {
  await using f = await notesFolder();
  // GNU timeout puts itself in a process group of its own, in the agent's session.
  const agent = startDetached(`timeout 60 sleep 61 & echo $! > ${f.pidFile}; wait`, {
    AGENT_EVENT_ID: "evt_1",
  });
  try {
    agentProcessNotes(f.dir).started(agent.pid, "evt_1");
    const timeoutPid = await eventually(
      async () => Number(await Deno.readTextFile(f.pidFile).catch(() => "")) || null,
      { what: "the agent's child" },
    );
    const killed = killLeftoverAgents(f.dir);
    assert.ok(killed.includes(agent.pid) && killed.includes(timeoutPid), String(killed));
    await agent.status;
    assert.ok(await processExited(timeoutPid), "the child that left the group");
    assert.deepEqual([...Deno.readDirSync(f.dir)], [], "the note is forgotten");
  } finally {
    try {
      agent.kill("SIGKILL");
    } catch { /* killed by the test */ }
  }
});

Deno.test("killLeftoverAgents() spares a session whose id was reused by another program", async () => {
  await using f = await notesFolder();
  // Another program now leads a session with the noted id: it started later and does not carry
  // the event id.
  const other = startDetached("sleep 30", {});
  try {
    agentProcessNotes(f.dir).started(other.pid, "evt_2");
    const path = join(f.dir, String(other.pid));
    const note = JSON.parse(Deno.readTextFileSync(path));
    Deno.writeTextFileSync(path, JSON.stringify({ ...note, start: "1" }));
    assert.deepEqual(killLeftoverAgents(f.dir), []);
    assert.equal(await processExited(other.pid), false, "still running");
    assert.deepEqual([...Deno.readDirSync(f.dir)], []);
  } finally {
    other.kill("SIGKILL");
    await other.status;
  }
});

Deno.test("killLeftoverAgents() forgets a note of another boot or pid namespace without killing", async () => {
  await using f = await notesFolder();
  const agent = startDetached("sleep 30", { AGENT_EVENT_ID: "evt_3" });
  try {
    agentProcessNotes(f.dir).started(agent.pid, "evt_3");
    const path = join(f.dir, String(agent.pid));
    const note = JSON.parse(Deno.readTextFileSync(path));
    Deno.writeTextFileSync(path, JSON.stringify({ ...note, boot: "another-boot" }));
    assert.deepEqual(killLeftoverAgents(f.dir), []);
    assert.equal(await processExited(agent.pid), false, "still running");
  } finally {
    agent.kill("SIGKILL");
    await agent.status;
  }
});

Deno.test("a run that ended leaves no note, and no notes is nothing to kill", async () => {
  await using f = await notesFolder();
  assert.deepEqual(killLeftoverAgents(f.dir), [], "no folder yet");
  const notes = agentProcessNotes(f.dir);
  notes.started(Deno.pid, "evt_4");
  assert.deepEqual([...Deno.readDirSync(f.dir)].map((entry) => entry.name), [String(Deno.pid)]);
  notes.ended(Deno.pid);
  assert.deepEqual([...Deno.readDirSync(f.dir)], []);
});
