/**
 * The README stays true: its quick start installs the `agent` command (into a temporary root)
 * and that command starts a working gateway in a fresh home, and the worked example's commands
 * run as written with the installed `agent`.
 */
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { cleanEnv, eventually, ROOT, tempHome } from "./_helpers.ts";

const README = await Deno.readTextFile(join(ROOT, "README.md"));

/** The shell code blocks of the README section that starts with `heading`. */
function shellBlocks(heading: string): string[] {
  const section = README.split(/^## /m).find((s) => s.startsWith(heading));
  assert.ok(section, `README has a "## ${heading}" section`);
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]);
}

/** Shell lines with comments dropped and `\` continuations joined. */
function commands(block: string): string[] {
  return block.replace(/\\\n\s*/g, "").split("\n")
    .map((line) => line.replace(/\s+#.*$/, "").trim())
    .filter((line) => line !== "");
}

/** Splits a command line into words, honouring single quotes. */
function words(line: string): string[] {
  return [...line.matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2]);
}

/**
 * Runs the README's `deno task install` line with `--root` added: a temporary install root.
 * @returns the PATH a user has once the install's bin folder is on it, and the cleanup
 */
async function install(line: string): Promise<{ path: string } & AsyncDisposable> {
  const root = await Deno.makeTempDir({ prefix: "agent-install-" });
  const dispose = () => Deno.remove(root, { recursive: true }).catch(() => {});
  const output = await new Deno.Command(Deno.execPath(), {
    args: [...words(line).slice(1), "--root", root],
    cwd: ROOT,
    env: cleanEnv({}),
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  if (!output.success) {
    await dispose();
    assert.fail(`${line}\n${decoder.decode(output.stdout)}${decoder.decode(output.stderr)}`);
  }
  const path = `${join(root, "bin")}:${dirname(Deno.execPath())}:/usr/bin:/bin`;
  return { path, [Symbol.asyncDispose]: dispose };
}

Deno.test("README quick start: install, then `agent gateway run` in a fresh home answers /health", async () => {
  const [quick] = shellBlocks("Quick start");
  const [installLine, gatewayLine, ...rest] = commands(quick);
  assert.deepEqual([installLine, gatewayLine, rest], [
    "deno task install",
    "agent gateway run",
    [],
  ]);
  await using installed = await install(installLine);
  await using h = await tempHome();
  const child = new Deno.Command("agent", {
    args: words(gatewayLine).slice(1),
    cwd: h.home,
    env: cleanEnv({ PATH: installed.path, AGENT_HOME: h.home, WEBHOOK_PORT: "0" }),
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let output = "";
  const reader = (async () => {
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) output += chunk;
  })();
  const stderr = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  (async () => {
    while (!(await stderr.read()).done) { /* drain */ }
  })();
  try {
    const url = await eventually(() => output.match(/listening on (\S+)/)?.[1], {
      timeoutMs: 30_000,
      what: "the gateway to listen",
    });
    const health = await fetch(`${url}/health`);
    assert.deepEqual(await health.json(), { status: "ok", platform: "webhook" });
    assert.match(output, /Created .*config\.yaml/);
  } finally {
    child.kill("SIGTERM");
    await child.status;
    await reader;
  }
});

Deno.test("README worked example: setup and subscribe run as written", async () => {
  const [setupBlock] = shellBlocks("A worked GitHub example");
  const lines = commands(setupBlock).filter((line) =>
    line.startsWith("agent ") && !line.endsWith("&")
  );
  assert.ok(lines.some((line) => line.startsWith("agent gateway setup")));
  assert.ok(lines.some((line) => line.startsWith("agent webhook subscribe github-issues")));
  await using installed = await install(commands(shellBlocks("Quick start")[0])[0]);
  await using h = await tempHome();
  for (const line of lines) {
    const output = await new Deno.Command("agent", {
      args: words(line).slice(1),
      cwd: h.home,
      env: cleanEnv({ PATH: installed.path, AGENT_HOME: h.home, TELEGRAM_BOT_TOKEN: "1:readme" }),
      clearEnv: true,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(output.stdout);
    assert.equal(output.code, 0, `${line}\n${text}${new TextDecoder().decode(output.stderr)}`);
    if (line.includes("subscribe")) {
      assert.match(text, /Created subscription "github-issues"/);
      assert.match(text, /URL:\s+http:\/\/localhost:8644\/webhooks\/github-issues/);
      assert.match(text, /Events:\s+issues\.opened\n/);
      assert.match(text, /Deliver: telegram \(chat 123456789\)/);
    }
  }
  // The subscription fires on new issues only, with a prompt about the issue.
  const record = JSON.parse(
    await Deno.readTextFile(join(h.home, "webhook_subscriptions.json")),
  )["github-issues"];
  assert.deepEqual(record.events, ["issues.opened"]);
  assert.doesNotMatch(record.prompt, /pull_request|__event__/);
});
