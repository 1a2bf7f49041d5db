/**
 * The README stays true: its quick-start gateway command starts a working gateway in a fresh
 * home, and the worked example's commands run as written.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
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

Deno.test("README quick start: `deno task gateway` in a fresh home answers /health", async () => {
  const [quick] = shellBlocks("Quick start");
  const gatewayCommand = commands(quick).find((line) => line.includes("gateway"));
  assert.equal(gatewayCommand, "deno task gateway");
  await using h = await tempHome();
  const child = new Deno.Command(Deno.execPath(), {
    args: words(gatewayCommand!).slice(1),
    cwd: ROOT,
    env: cleanEnv({ AGENT_HOME: h.home, WEBHOOK_PORT: "0" }),
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
  await using h = await tempHome();
  for (const line of lines) {
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["task", "--quiet", ...words(line)],
      cwd: ROOT,
      env: cleanEnv({ AGENT_HOME: h.home, TELEGRAM_BOT_TOKEN: "1:readme" }),
      clearEnv: true,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(output.stdout);
    assert.equal(output.code, 0, `${line}\n${text}${new TextDecoder().decode(output.stderr)}`);
    if (line.includes("subscribe")) {
      assert.match(text, /Created subscription "github-issues"/);
      assert.match(text, /URL:\s+http:\/\/localhost:8644\/webhooks\/github-issues/);
      assert.match(text, /Deliver: telegram \(chat 123456789\)/);
    }
  }
});
