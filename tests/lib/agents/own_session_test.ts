import assert from "node:assert/strict";
import { join } from "node:path";
import type { AgentProcessNotes } from "../../../lib/agents/mod.ts";
import { spawnInOwnSession } from "../../../lib/agents/own_session.ts";
import { agentError } from "./_assert.ts";
import { commandRunner } from "./_command_runner.ts";

Deno.test("command runner reports a missing program as permanent", async () => {
  const error = await agentError(
    commandRunner(["/nonexistent/agent-binary"])({ prompt: "p", eventId: "e" }),
  );
  assert.equal(error.permanent, true);
  assert.match(error.message, /Cannot start the agent command/);
});

Deno.test("command runner reports a missing program named without a slash as permanent", async () => {
  const error = await agentError(
    commandRunner(["no-such-agent-program-here"])({ prompt: "p", eventId: "e" }),
  );
  assert.equal(error.permanent, true);
  assert.match(error.message, /"no-such-agent-program-here": not found on PATH/);
});

/**
 * Runs `test` with a script `name` holding `text`, with `mode`, in a new folder removed after.
 * @returns what `test` returns
 */
async function withScript<T>(
  script: { name: string; text: string; mode: number },
  test: (path: string, dir: string) => Promise<T>,
): Promise<T> {
  const dir = await Deno.makeTempDir();
  try {
    const path = join(dir, script.name);
    await Deno.writeTextFile(path, script.text);
    await Deno.chmod(path, script.mode); // whatever the umask
    return await test(path, dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("command runner reports a program that is not executable as permanent", async () => {
  await withScript(
    { name: "agent.sh", text: "#!/bin/sh\necho hi\n", mode: 0o644 },
    async (path) => {
      const error = await agentError(commandRunner([path])({ prompt: "p", eventId: "e" }));
      assert.equal(error.permanent, true);
      assert.match(error.message, /is not executable/);
      await Deno.chmod(path, 0o755);
      assert.equal((await commandRunner([path])({ prompt: "p", eventId: "e" })).text, "hi");
    },
  );
});

Deno.test("command runner finds a program on the given PATH, not the gateway's", async () => {
  const script = { name: "my-agent", text: "#!/bin/sh\necho from $0\n", mode: 0o755 };
  await withScript(script, async (path, dir) => {
    const answer = await commandRunner(["my-agent"], { env: { PATH: `/nonexistent:${dir}:/bin` } })(
      {
        prompt: "p",
        eventId: "e",
      },
    );
    assert.equal(answer.text, `from ${path}`);
  });
});

Deno.test("command runner reports a script whose interpreter is missing as permanent", async () => {
  const script = { name: "agent", text: "#!/nonexistent/interpreter\necho hi\n", mode: 0o755 };
  await withScript(script, async (path) => {
    const error = await agentError(commandRunner([path])({ prompt: "p", eventId: "e" }));
    assert.equal(error.permanent, true, "no retry can help: fix agent.command, then replay");
    assert.equal(error.unavailable, false);
    assert.match(error.message, /Cannot start the agent command ".*agent": /);
  });
});

Deno.test("command runner reports a program given as a folder as permanent", async () => {
  const error = await agentError(commandRunner(["/tmp"])({ prompt: "p", eventId: "e" }));
  assert.equal(error.permanent, true);
  assert.match(error.message, /Cannot start the agent command "\/tmp": \/tmp is not a file/);
});

/** The session id of a process: field 6 of `/proc/<pid>/stat` (Linux). */
function sessionOf(pid: number | "self"): number {
  const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[3]);
}

Deno.test({
  name: "spawnInOwnSession() makes the program a session leader, through setsid or detached",
  ignore: Deno.build.os !== "linux",
  fn: async () => {
    for (const setsid of [undefined, null]) {
      const child = spawnInOwnSession("sh", ["-c", "read line; echo $$"], {
        PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      }, { setsid });
      // It waits for a line meanwhile, so it is still there to be looked at.
      const session = await eventuallySession(child.pid);
      const writer = child.stdin.getWriter();
      await writer.write(new TextEncoder().encode("go\n"));
      await writer.close();
      const output = await child.output();
      assert.equal(new TextDecoder().decode(output.stdout).trim(), String(child.pid), `${setsid}`);
      assert.equal(session, child.pid, `its own session (setsid: ${setsid})`);
      assert.notEqual(session, sessionOf("self"));
    }
  },
});

/** The session of `pid` once it has left the test's session (setsid runs just after spawn). */
async function eventuallySession(pid: number): Promise<number> {
  for (let i = 0; i < 100; i++) {
    const session = sessionOf(pid);
    if (session !== sessionOf("self")) return session;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return sessionOf(pid);
}

Deno.test({
  name:
    "command runner starts the program as the leader of a session of its own, under the noted pid",
  ignore: Deno.build.os !== "linux",
  fn: async () => {
    const noted: number[] = [];
    const notes: AgentProcessNotes = { started: (pid) => noted.push(pid), ended: () => {} };
    // Field 6 of /proc/<pid>/stat is the session id; the shell is the program, $$ its pid.
    const program = ["sh", "-c", "echo $$ $(cut -d' ' -f6 /proc/$$/stat)"];
    const answer = await commandRunner(program, { processNotes: notes })({
      prompt: "",
      eventId: "e",
    });
    const [pid, session] = answer.text.split(" ").map(Number);
    assert.deepEqual(noted, [pid], "the pid a stop or the next start kills the group of");
    assert.equal(session, pid, "its own session, which a timeout and the cleanup kill");
    assert.notEqual(session, sessionOf("self"));
  },
});
