import assert from "node:assert/strict";
import { join } from "node:path";
import { agentProcessNotes, killLeftoverAgents } from "../../../lib/agents/_leftovers.ts";
import { processExited } from "../../_helpers.ts";

Deno.test("killLeftoverAgents() kills a noted process group whose leader is still the same process", async () => {
  const dir = join(await Deno.makeTempDir(), "agents");
  // A group of its own, as the command runner starts its programs.
  const child = new Deno.Command("sleep", { args: ["30"], detached: true, stdout: "null" })
    .spawn();
  try {
    agentProcessNotes(dir).started(child.pid);
    assert.deepEqual(killLeftoverAgents(dir), [child.pid]);
    await child.status;
    assert.ok(await processExited(child.pid));
    assert.deepEqual([...Deno.readDirSync(dir)], [], "the note is forgotten");
  } finally {
    try {
      child.kill("SIGKILL");
    } catch { /* killed by the test */ }
    await Deno.remove(join(dir, ".."), { recursive: true });
  }
});

Deno.test("killLeftoverAgents() spares a process that took a noted id, and forgets the note", async () => {
  const dir = join(await Deno.makeTempDir(), "agents");
  try {
    Deno.mkdirSync(dir);
    // This test's own process id, noted with another start time: the id was reused.
    Deno.writeTextFileSync(join(dir, String(Deno.pid)), "1");
    assert.deepEqual(killLeftoverAgents(dir), []);
    assert.deepEqual([...Deno.readDirSync(dir)], []);
  } finally {
    await Deno.remove(join(dir, ".."), { recursive: true });
  }
});

Deno.test("a run that ended leaves no note, and no notes is nothing to kill", async () => {
  const dir = join(await Deno.makeTempDir(), "agents");
  try {
    assert.deepEqual(killLeftoverAgents(dir), [], "no folder yet");
    const notes = agentProcessNotes(dir);
    notes.started(Deno.pid);
    assert.deepEqual([...Deno.readDirSync(dir)].map((entry) => entry.name), [String(Deno.pid)]);
    notes.ended(Deno.pid);
    assert.deepEqual([...Deno.readDirSync(dir)], []);
  } finally {
    await Deno.remove(join(dir, ".."), { recursive: true });
  }
});
