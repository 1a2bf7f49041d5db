import assert from "node:assert/strict";
import { ConfigError } from "../../../lib/errors.ts";
import type { AgentProcessNotes } from "../../../lib/agents/mod.ts";
import { PIPE_GRACE_AFTER_EXIT_MS } from "../../../lib/agents/command.ts";
import { processExited } from "../../_helpers.ts";
import { agentError } from "./_assert.ts";
import { commandRunner } from "./_command_runner.ts";
import { silenceInstruction } from "../../../lib/agents/skills.ts";

Deno.test("command runner writes the prompt on stdin and returns stdout trimmed", async () => {
  const answer = await commandRunner(["cat"])({ prompt: "hello agent\n", eventId: "evt_1" });
  // The sentence that allows a silent answer is the system prompt when none is given.
  const text = `${silenceInstruction("[SILENT]")}\n\nhello agent`;
  assert.deepEqual(answer, { provider: "command", text }, "no model nor tokens");
});

Deno.test("command runner puts the system prompt before the prompt on stdin", async () => {
  const answer = await commandRunner(["cat"])({
    prompt: "event",
    systemPrompt: "skills",
    eventId: "e",
  });
  assert.equal(answer.text, `skills\n\n${silenceInstruction("[SILENT]")}\n\nevent`);
});

Deno.test("command runner passes the given environment and AGENT_EVENT_ID, nothing else", async () => {
  const script = "console.log(Deno.env.get('AGENT_EVENT_ID'), Deno.env.get('ONLY_HERE'), " +
    "Deno.env.get('HOME') ?? 'no-home')";
  const answer = await commandRunner([Deno.execPath(), "eval", script], {
    env: { ONLY_HERE: "yes", DENO_DIR: Deno.env.get("DENO_DIR") ?? "/tmp/deno-dir-test" },
  })({ prompt: "", eventId: "evt_42" });
  assert.equal(answer.text, "evt_42 yes no-home");
});

Deno.test("command runner withholds the webhook secret and the bot tokens", async () => {
  const script = "console.log(['WEBHOOK_SECRET', 'TELEGRAM_BOT_TOKEN', 'GITHUB_TOKEN', " +
    "'OPENAI_API_KEY'].map((k) => Deno.env.get(k) ?? '-').join(' '))";
  const answer = await commandRunner([Deno.execPath(), "eval", script], {
    env: {
      WEBHOOK_SECRET: "s",
      TELEGRAM_BOT_TOKEN: "t",
      GITHUB_TOKEN: "g",
      OPENAI_API_KEY: "own-key",
      DENO_DIR: Deno.env.get("DENO_DIR") ?? "/tmp/deno-dir-test",
    },
  })({ prompt: "", eventId: "e" });
  assert.equal(answer.text, "- - - own-key");
});

Deno.test("command runner withholds the state database's URL and libpq's password", async () => {
  const script = "console.log(['DATABASE_URL', 'PGPASSWORD', 'PGPASSFILE', 'PGHOST']" +
    ".map((k) => Deno.env.get(k) ?? '-').join(' '))";
  const answer = await commandRunner([Deno.execPath(), "eval", script], {
    env: {
      DATABASE_URL: "postgres://agent:pw@db:5432/agent",
      PGPASSWORD: "pw",
      PGPASSFILE: "/home/agent/.pgpass",
      PGHOST: "db",
      DENO_DIR: Deno.env.get("DENO_DIR") ?? "/tmp/deno-dir-test",
    },
  })({ prompt: "", eventId: "e" });
  assert.equal(answer.text, "- - - db");
});

Deno.test("command runner reports a non-zero exit as retryable with the end of stderr", async () => {
  const script = "console.error('x'.repeat(2000) + 'rate limited'); Deno.exit(3)";
  const error = await agentError(
    commandRunner([Deno.execPath(), "eval", script])({ prompt: "p", eventId: "e" }),
  );
  assert.equal(error.permanent, false);
  assert.equal(error.unavailable, true, "the program's own failure: the worker may pause runs");
  assert.match(error.message, /exited with 3: x+rate limited$/);
  assert.ok(error.message.length < 700, "only a short tail of stderr");
});

Deno.test("command runner refuses an answer over 1 MiB and stops the program", async () => {
  // An endless stream of output: the runner must stop it rather than collect it all.
  const error = await agentError(commandRunner(["yes", "answer"])({ prompt: "p", eventId: "e" }));
  assert.equal(error.permanent, false);
  assert.match(error.message, /"yes" printed more than 1048576 bytes/);
  const exact = "x".repeat(1_048_576);
  const script = `await Deno.stdout.write(new TextEncoder().encode("${
    "x".repeat(64)
  }".repeat(16384)))`;
  const answer = await commandRunner([Deno.execPath(), "eval", script], {
    env: { DENO_DIR: Deno.env.get("DENO_DIR") ?? "/tmp/deno-dir-test" },
  })({ prompt: "", eventId: "e" });
  assert.equal(answer.text, exact, "exactly 1 MiB is still an answer");
});

Deno.test("command runner reports a program that fails without reading stdin", async () => {
  const error = await agentError(
    commandRunner(["false"])({ prompt: "x".repeat(1 << 20), eventId: "e" }),
  );
  assert.equal(error.permanent, false);
  assert.match(error.message, /"false" exited with 1/);
});

Deno.test("command runner reports empty output as retryable", async () => {
  const error = await agentError(commandRunner(["true"])({ prompt: "p", eventId: "e" }));
  assert.equal(error.permanent, false);
  assert.equal(error.unavailable, true);
  assert.match(error.message, /printed nothing/);
});

Deno.test("command runner names what a program that exits 0 with no output wrote to stderr", async () => {
  const program = ["sh", "-c", "echo 'error: API key not set' >&2; exit 0"];
  const error = await agentError(commandRunner(program)({ prompt: "p", eventId: "e" }));
  assert.equal(error.permanent, false);
  assert.match(error.message, /"sh" printed nothing: error: API key not set$/);
});

Deno.test("command runner kills a program that runs past the timeout, children included", async () => {
  const started = performance.now();
  const error = await agentError(
    commandRunner(["sh", "-c", "sleep 30; echo late"], { timeoutSeconds: 0.2 })({
      prompt: "",
      eventId: "e",
    }),
  );
  assert.equal(error.permanent, false);
  assert.equal(error.unavailable, false, "a timeout may be the prompt's own (a long answer)");
  assert.match(error.message, /did not finish within 0.2 s/);
  assert.ok(performance.now() - started < 5_000, "the run ends soon after the timeout");
});

/** Reads the pid a program's background child wrote to `pidFile`, waiting up to 2 s for it. */
async function childPidFrom(pidFile: string): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const pid = Number(await Deno.readTextFile(pidFile).catch(() => "0"));
    if (pid > 0) return pid;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.fail(`no pid in ${pidFile}: the program did not start its child`);
}

Deno.test("command runner answers once the program exits 0, though a background child keeps stdout open", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const pidFile = `${dir}/child.pid`;
    const started = performance.now();
    const answer = await commandRunner(
      ["sh", "-c", `cat >/dev/null; sleep 30 & echo $! > ${pidFile}; echo answer`],
      { timeoutSeconds: 10 },
    )({ prompt: "p", eventId: "e" });
    assert.equal(answer.text, "answer");
    assert.ok(
      performance.now() - started < PIPE_GRACE_AFTER_EXIT_MS + 4_000,
      "the run ends a grace period after the exit, not at the timeout",
    );
    const childPid = await childPidFrom(pidFile);
    assert.ok(await processExited(childPid), `the background child ${childPid} was killed`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("command runner reports a non-zero exit with its stderr, though a background child keeps stderr open", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const pidFile = `${dir}/child.pid`;
    const started = performance.now();
    const error = await agentError(
      commandRunner(
        ["sh", "-c", `sleep 30 & echo $! > ${pidFile}; echo 'quota exceeded' >&2; exit 3`],
        { timeoutSeconds: 10 },
      )({ prompt: "p", eventId: "e" }),
    );
    assert.equal(error.permanent, false);
    assert.match(error.message, /"sh" exited with 3: quota exceeded$/);
    assert.ok(performance.now() - started < PIPE_GRACE_AFTER_EXIT_MS + 4_000, "no timeout wait");
    const childPid = await childPidFrom(pidFile);
    assert.ok(await processExited(childPid), `the background child ${childPid} was killed`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("command runner answers though a child outside its process group keeps stdout open", async () => {
  // setsid puts the child in a session of its own, out of reach of the group kill: the run
  // must still end by no longer reading, not wait for the pipe to close.
  const dir = await Deno.makeTempDir();
  const pidFile = `${dir}/child.pid`;
  try {
    const started = performance.now();
    const answer = await commandRunner(
      ["sh", "-c", `setsid sh -c 'echo $$ > ${pidFile}; exec sleep 30' & echo answer`],
      { timeoutSeconds: 10 },
    )({ prompt: "p", eventId: "e" });
    assert.equal(answer.text, "answer");
    assert.ok(performance.now() - started < PIPE_GRACE_AFTER_EXIT_MS + 4_000, "no timeout wait");
  } finally {
    const escaped = Number(await Deno.readTextFile(pidFile).catch(() => "0"));
    if (escaped > 0) {
      try {
        Deno.kill(escaped, "SIGKILL");
      } catch { /* already gone */ }
    }
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("command runner still times out a program that closes stdout but keeps running", async () => {
  const error = await agentError(
    commandRunner(["sh", "-c", "echo answer; exec >&-; sleep 30"], { timeoutSeconds: 0.5 })({
      prompt: "",
      eventId: "e",
    }),
  );
  assert.equal(error.permanent, false);
  assert.match(error.message, /did not finish within 0.5 s/);
});

Deno.test("command runner kills the program and its children when the run is aborted", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const pidFile = `${dir}/child.pid`;
    const stop = new AbortController();
    const run = commandRunner(["sh", "-c", `sleep 30 & echo $! > ${pidFile}; wait`])({
      prompt: "",
      eventId: "e",
      signal: stop.signal,
    });
    let childPid = 0;
    for (let i = 0; i < 200 && !childPid; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      childPid = Number(await Deno.readTextFile(pidFile).catch(() => "0"));
    }
    assert.ok(childPid > 0, "the program started its child");
    const started = performance.now();
    stop.abort();
    const error = await agentError(run);
    assert.match(error.message, /was stopped: the gateway is stopping/);
    assert.ok(performance.now() - started < 5_000, "the run ends soon after the abort");
    assert.ok(await processExited(childPid), `the program's child ${childPid} was killed too`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("command runner stops at once a run whose signal is already aborted, leaving no process", async () => {
  // Killed just after the spawn, before setsid has made the group: the program never runs.
  const noted: number[] = [];
  const notes: AgentProcessNotes = { started: (pid) => noted.push(pid), ended: () => {} };
  const error = await agentError(
    commandRunner(["sh", "-c", "sleep 30"], { processNotes: notes })({
      prompt: "",
      eventId: "e",
      signal: AbortSignal.abort(),
    }),
  );
  assert.match(error.message, /was stopped/);
  assert.equal(noted.length, 1);
  assert.ok(await processExited(noted[0]), "nothing of the run is left");
});

Deno.test("command runner reports a program killed by a signal as retryable, not as the agent down", async () => {
  // The kernel's out-of-memory killer may have picked it for this prompt's sake.
  const error = await agentError(
    commandRunner(["sh", "-c", "kill -9 $$"])({ prompt: "p", eventId: "e" }),
  );
  assert.equal(error.permanent, false);
  assert.equal(error.unavailable, false);
  assert.match(error.message, /was killed by SIGKILL/);
});

Deno.test("createAgentRunner() refuses provider command without a command", () => {
  assert.throws(() => commandRunner([]), ConfigError);
});
