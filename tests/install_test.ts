/**
 * `deno task install` and `deno task compile`, run as a user runs them: the installed `agent`
 * from another folder with its npm registry out of reach, and the build that cannot download
 * the Deno runtime.
 */
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { cleanEnv, enabledConfig, ROOT, runProgram, tempHome } from "./_helpers.ts";

const VERSION = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.json"))).version;

/** A proxy on a loopback port where nothing listens: no download can succeed. */
const NO_NETWORK = {
  HTTPS_PROXY: "http://127.0.0.1:9",
  HTTP_PROXY: "http://127.0.0.1:9",
  NO_PROXY: "",
};
/** No network, nor an npm registry (whose packages Deno caches by the registry's address). */
const OFFLINE = { ...NO_NETWORK, NPM_CONFIG_REGISTRY: "http://127.0.0.1:9/" };

/** A temporary folder that removes itself. */
async function tempDir(prefix: string): Promise<{ path: string } & AsyncDisposable> {
  const path = await Deno.makeTempDir({ prefix });
  return {
    path,
    [Symbol.asyncDispose]: () => Deno.remove(path, { recursive: true }).catch(() => {}),
  };
}

/** The versions a deno.lock pins, by specifier (`npm:openai@^7.57.0` → `7.57.0`). */
async function pins(lockfile: string): Promise<Record<string, string>> {
  return JSON.parse(await Deno.readTextFile(lockfile)).specifiers;
}

Deno.test("deno task install puts an agent on PATH that runs from any folder, offline", async () => {
  await using root = await tempDir("agent-install-");
  await using h = await tempHome({ config: enabledConfig() });
  await using elsewhere = await tempDir("agent-cwd-");
  // The user's PATH: the folder of deno, not yet the install's bin.
  const path = `${dirname(Deno.execPath())}:/usr/bin:/bin`;
  const install = () =>
    runProgram(Deno.execPath(), ["task", "-q", "install", "--root", root.path], {
      cwd: ROOT,
      env: cleanEnv({ PATH: path }),
    });
  const first = await install();
  assert.equal(first.code, 0, first.stdout + first.stderr);
  const bin = join(root.path, "bin");
  assert.match(first.stdout, new RegExp(`Installed ${bin}/agent, which runs `));
  assert.match(first.stdout, /is not on your PATH\. Add it, then open a new shell:/);
  assert.ok(first.stdout.includes(`echo 'export PATH="${bin}:$PATH"' >> ~/.bashrc`));
  assert.doesNotMatch(first.stdout, /does not find on its PATH/, "deno is on this PATH");
  // Installing again replaces the command (deno install's --force would drop the lockfile).
  const again = await install();
  assert.equal(again.code, 0, again.stdout + again.stderr);
  // The installed command uses the versions the checkout's deno.lock pins.
  const locked = await pins(join(ROOT, "deno.lock"));
  const installed = await pins(join(bin, ".agent", "deno.lock"));
  for (const [specifier, version] of Object.entries(installed)) {
    if (specifier in locked) assert.equal(version, locked[specifier], specifier);
  }

  // Offline, and with an empty Deno cache: the command has all it needs beside it.
  await using cache = await tempDir("agent-deno-dir-");
  const env = cleanEnv({
    PATH: `${bin}:${path}`,
    AGENT_HOME: h.home,
    DENO_DIR: cache.path,
    ...OFFLINE,
  });
  const agent = (...args: string[]) => runProgram("agent", args, { cwd: elsewhere.path, env });
  const version = await agent("--version");
  assert.deepEqual(version, { code: 0, stdout: `agent ${VERSION}\n`, stderr: "" });
  const subscribed = await agent("webhook", "subscribe", "gh", "--events", "issues.opened");
  assert.equal(subscribed.code, 0, subscribed.stderr);
  const list = await agent("webhook", "list");
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, /^gh$/m);
  // No Deno line (Download, Task, Warning) reaches the user.
  assert.equal(list.stderr, "");
});

Deno.test("deno task -q agent on a cold Deno cache prints the command's output alone", async () => {
  // An empty cache: every npm package is downloaded first, with no line about it.
  await using cache = await tempDir("agent-deno-dir-");
  const result = await runProgram(Deno.execPath(), ["task", "-q", "agent", "--version"], {
    cwd: ROOT,
    env: cleanEnv({ DENO_DIR: cache.path }),
  });
  assert.deepEqual(result, { code: 0, stdout: `agent ${VERSION}\n`, stderr: "" });
});

Deno.test("deno task install leaves an agent it did not install in place", async () => {
  await using root = await tempDir("agent-install-");
  const mine = join(root.path, "bin", "agent");
  await Deno.mkdir(dirname(mine));
  await Deno.writeTextFile(mine, "#!/bin/sh\necho mine\n");
  const result = await runProgram(Deno.execPath(), ["task", "-q", "install", "--root", root.path], {
    cwd: ROOT,
    env: cleanEnv({}),
  });
  assert.equal(result.code, 1);
  assert.match(
    result.stderr,
    /^Cannot install agent: .*bin\/agent is there and was not installed by deno install: remove it, or install elsewhere with --root DIR\n$/,
  );
  assert.equal(await Deno.readTextFile(mine), "#!/bin/sh\necho mine\n");
});

Deno.test("deno task compile without the Deno runtime says so in one line and leaves nothing", async () => {
  await using out = await tempDir("agent-compile-");
  const dist = join(out.path, "dist");
  // The dependencies cached, as after `deno task install`: only the runtime is missing.
  const cached = await runProgram(Deno.execPath(), ["install", "--quiet"], {
    cwd: ROOT,
    env: cleanEnv({}),
  });
  assert.equal(cached.code, 0, cached.stderr);
  const result = await runProgram(
    Deno.execPath(),
    ["task", "-q", "compile", "--output", join(dist, "agent")],
    // A backtrace asked for, to check that none is shown.
    { cwd: ROOT, env: cleanEnv({ ...NO_NETWORK, RUST_BACKTRACE: "1" }) },
  );
  if (result.code === 0) {
    // This machine has the runtime cached: the build is there, and runs.
    const version = await runProgram(join(dist, "agent"), ["--version"], {
      cwd: out.path,
      env: {},
    });
    assert.equal(version.stdout, `agent ${VERSION}\n`);
    return;
  }
  assert.equal(result.code, 1);
  assert.match(
    result.stderr,
    /^Cannot build .*dist\/agent: deno compile could not download the Deno runtime it builds on \(.+\)\. It needs network the first time; `deno task install` works offline\.\n$/,
  );
  assert.equal(await Deno.stat(dist).then(() => "there", () => "gone"), "gone");
});
