/**
 * `agent gateway install`, run as the real CLI with a stand-in `systemctl` first on the PATH
 * (it records its arguments; these machines have no user systemd to talk to). The unit it
 * writes is checked by systemd's own `systemd-analyze verify`, and its ExecStart line, read back
 * as systemd reads it, must start a gateway that answers `/health`.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { systemdUnit } from "../../commands/_systemd_unit.ts";
import { cleanEnv, enabledConfig, runCli, startGatewayProcess, tempHome } from "../_helpers.ts";
import {
  awkwardHome,
  denoDir,
  fakeSystemctl,
  systemdVerifies,
  systemdWords,
} from "./_systemd_fakes.ts";

/** The `Environment=` assignments of a unit file, read as systemd reads them. */
function unitEnvironment(unit: string): Record<string, string> {
  return Object.fromEntries(
    unitLines(unit, "Environment").map((l) => {
      const [assignment] = systemdWords(l.slice("Environment=".length), "environment");
      const equals = assignment.indexOf("=");
      return [assignment.slice(0, equals), assignment.slice(equals + 1)];
    }),
  );
}

/** The lines of a unit file that set `key`. */
function unitLines(unit: string, key: string): string[] {
  return unit.split("\n").filter((l) => l.startsWith(`${key}=`));
}

/**
 * Runs a unit's ExecStart, read as systemd reads it, with its environment from `/`, and calls
 * `check` with the URL of the gateway it starts; stops it after.
 * @throws Error with its output when the command starts no gateway
 */
async function startUnitCommand(
  unit: string,
  environment: Record<string, string>,
  check: (url: string) => Promise<void>,
): Promise<void> {
  const [program, ...args] = systemdWords(
    unitLines(unit, "ExecStart")[0].slice("ExecStart=".length),
    "command",
  );
  const child = new Deno.Command(program, {
    args,
    env: cleanEnv({ ...environment, WEBHOOK_PORT: "0" }),
    clearEnv: true,
    cwd: "/",
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  try {
    let text = "";
    const decoder = new TextDecoder();
    const reader = child.stdout.getReader();
    let url: string | undefined;
    while (url === undefined) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the unit's command did not start a gateway:\n${text}`);
      text += decoder.decode(value);
      url = text.match(/listening on (http:\/\/\S+)/)?.[1];
    }
    reader.releaseLock();
    await check(url);
  } finally {
    child.kill("SIGTERM");
    await child.status;
    await child.stdout.cancel().catch(() => {});
    await child.stderr.cancel();
  }
}

Deno.test("install writes agent-gateway.service, enables and starts it; the unit runs the gateway", async () => {
  await using h = await tempHome();
  const home = await awkwardHome(h.home);
  const systemctl = await fakeSystemctl(h.home);
  const xdg = join(h.home, "xdg");
  const env = { AGENT_HOME: home, XDG_CONFIG_HOME: xdg, PATH: systemctl.path };

  const result = await runCli(["gateway", "install"], env);
  assert.equal(result.code, 0, result.stderr);
  const unitFile = join(xdg, "systemd", "user", "agent-gateway.service");
  assert.match(result.stdout, /Installed agent-gateway\.service: .*agent-gateway\.service/);
  assert.match(result.stdout, /journalctl --user -u agent-gateway/);
  assert.match(result.stdout, /loginctl enable-linger/);
  assert.deepEqual(await systemctl.calls(), [
    "--user --version",
    "--user daemon-reload",
    "--user enable agent-gateway.service",
    "--user reset-failed agent-gateway.service",
    "--user restart agent-gateway.service",
  ]);

  const unit = await Deno.readTextFile(unitFile);
  assert.match(unit, /^Restart=on-failure$/m);
  assert.match(unit, /^KillMode=mixed$/m);
  assert.match(unit, /^WantedBy=default\.target$/m);
  const environment = unitEnvironment(unit);
  assert.equal(environment.AGENT_HOME, home);
  assert.equal(environment.PATH, systemctl.path);
  // The command line, read back as systemd reads it, starts this gateway with this home.
  await startUnitCommand(unit, environment, async (url) => {
    const health = await fetch(`${url}/health`);
    assert.deepEqual(await health.json(), { status: "ok", platform: "webhook" });
    assert.ok((await Deno.stat(join(home, "state", "gateway.db"))).isFile);
  });

  await systemdVerifies(unitFile);

  const again = await runCli(["gateway", "install", "--no-start"], env);
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stdout, /Updated agent-gateway\.service/);
  assert.deepEqual((await systemctl.calls()).slice(5), [
    "--user --version",
    "--user daemon-reload",
    "--user enable agent-gateway.service",
  ]);
});

Deno.test("install where systemctl fails keeps the unit and prints the commands to finish", async () => {
  await using h = await tempHome({ config: enabledConfig(0) });
  const systemctl = await fakeSystemctl(h.home);
  const env = {
    AGENT_HOME: h.home,
    XDG_CONFIG_HOME: join(h.home, "xdg"),
    PATH: systemctl.path,
    FAKE_SYSTEMCTL_FAIL: "daemon-reload",
  };
  const result = await runCli(["gateway", "install"], env);
  assert.equal(result.code, 1);
  assert.match(result.stderr, /`systemctl --user daemon-reload` failed: Failed to connect to bus/);
  assert.match(result.stderr, /systemctl --user enable agent-gateway\.service/);
  assert.ok(
    (await Deno.stat(join(h.home, "xdg", "systemd", "user", "agent-gateway.service"))).isFile,
  );

  // Uninstall does not remove a unit that systemd may still be running.
  env.FAKE_SYSTEMCTL_FAIL = "disable";
  const removed = await runCli(["gateway", "uninstall"], env);
  assert.equal(removed.code, 1);
  assert.match(removed.stderr, /is left in place/);
  assert.ok(
    (await Deno.stat(join(h.home, "xdg", "systemd", "user", "agent-gateway.service"))).isFile,
  );
});

Deno.test("install without systemctl writes nothing and points to --print", async () => {
  await using h = await tempHome({ config: enabledConfig(0) });
  const empty = join(h.home, "empty-bin");
  await Deno.mkdir(empty);
  const env = { AGENT_HOME: h.home, XDG_CONFIG_HOME: join(h.home, "xdg"), PATH: empty };
  const result = await runCli(["gateway", "install"], env);
  assert.equal(result.code, 1);
  assert.match(result.stderr, /systemctl is not available here/);
  assert.match(result.stderr, /agent gateway install --print/);
  await assert.rejects(Deno.stat(join(h.home, "xdg")), Deno.errors.NotFound);

  const printed = await runCli(["gateway", "install", "--print"], env);
  assert.equal(printed.code, 0);
  assert.match(printed.stdout, /^ExecStart=\S+ .*gateway run$/m);
  await assert.rejects(Deno.stat(join(h.home, "xdg")), Deno.errors.NotFound);
});

Deno.test("install judges the platform as the service will see it, and says what the service will not see", async () => {
  await using h = await tempHome({
    config: enabledConfig(0).replace("enabled: true", "enabled: false"),
  });
  const systemctl = await fakeSystemctl(h.home);
  const env = { AGENT_HOME: h.home, XDG_CONFIG_HOME: join(h.home, "xdg"), PATH: systemctl.path };
  // WEBHOOK_ENABLED in this shell does not reach the service: config.yaml disables it there.
  const refused = await runCli(["gateway", "install"], { ...env, WEBHOOK_ENABLED: "true" });
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /Webhook platform is not enabled/);
  assert.deepEqual(await systemctl.calls(), []);

  await Deno.writeTextFile(join(h.home, "config.yaml"), enabledConfig(0));
  await Deno.writeTextFile(join(h.home, ".env"), "TELEGRAM_BOT_TOKEN=1:in-the-file\n");
  const installed = await runCli(["gateway", "install"], {
    ...env,
    TELEGRAM_BOT_TOKEN: "1:in-the-file",
    OPENAI_API_KEY: "sk-only-in-this-shell",
    AGENT_MODEL: "gpt-4o",
    HTTPS_PROXY: "http://127.0.0.1:3128",
    // The CLI runs with them too: the cache it already has, and a proxy it will not need.
    DENO_DIR: await denoDir(),
  });
  assert.equal(installed.code, 0, installed.stderr);
  assert.match(
    installed.stdout,
    /Note: AGENT_MODEL, OPENAI_API_KEY are set in this shell but not in .*\.env/,
  );
  assert.doesNotMatch(installed.stdout, /TELEGRAM_BOT_TOKEN/);
  assert.doesNotMatch(installed.stdout, /sk-only-in-this-shell/);
  // What Deno reads before .env is carried into the unit.
  assert.match(installed.stdout, /carried from this shell: DENO_DIR, HTTPS_PROXY/);
  const unit = await Deno.readTextFile(
    join(h.home, "xdg", "systemd", "user", "agent-gateway.service"),
  );
  assert.match(unit, /^Environment=HTTPS_PROXY=http:\/\/127\.0\.0\.1:3128$/m);
  assert.match(unit, new RegExp(`^Environment=DENO_DIR=${await denoDir()}$`, "m"));
  assert.doesNotMatch(unit, /OPENAI_API_KEY|AGENT_MODEL/);
});

Deno.test("install refuses to start a service beside a gateway started by hand, unless --no-start", async () => {
  await using h = await tempHome({ config: enabledConfig(0) });
  const systemctl = await fakeSystemctl(h.home);
  const env = { AGENT_HOME: h.home, XDG_CONFIG_HOME: join(h.home, "xdg"), PATH: systemctl.path };
  await using gateway = await startGatewayProcess({ AGENT_HOME: h.home });
  const refused = await runCli(["gateway", "install"], env);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, new RegExp(`already running with this home \\(${gateway.url}\\)`));
  await assert.rejects(Deno.stat(join(h.home, "xdg")), Deno.errors.NotFound);

  const enabled = await runCli(["gateway", "install", "--no-start"], env);
  assert.equal(enabled.code, 0, enabled.stderr);
  assert.match(enabled.stdout, /start it with: systemctl --user start agent-gateway/);
  // Installed again: the running gateway is taken for the service, and --no-start says restart.
  const updated = await runCli(["gateway", "install", "--no-start"], env);
  assert.match(
    updated.stdout,
    /keeps its old command until: systemctl --user restart agent-gateway/,
  );
  // With the service stopped, the running gateway is not the service's: refused again.
  const stopped = await runCli(["gateway", "install"], { ...env, FAKE_SYSTEMCTL_INACTIVE: "1" });
  assert.equal(stopped.code, 1, stopped.stdout);
  assert.match(stopped.stderr, /already running with this home/);
  const restarted = await runCli(["gateway", "install"], env);
  assert.equal(restarted.code, 0, restarted.stderr);
  const calls = await systemctl.calls();
  assert.ok(calls.includes("--user is-active --quiet agent-gateway.service"));
  assert.equal(calls.at(-1), "--user restart agent-gateway.service");
});

Deno.test("the unit quotes paths with blanks, quotes, backslashes, % and $ as systemd reads them", async () => {
  await using h = await tempHome();
  // systemd refuses quotes, backslashes and "$" in the program's own path ("special
  // characters"), so those are in an argument here.
  const folder = join(h.home, "my agent 100%");
  await Deno.mkdir(folder);
  const program = join(folder, "agent");
  await Deno.writeTextFile(program, "#!/bin/sh\n", { mode: 0o755 });
  const home = join(h.home, "home 50% $HOME");
  const config = join(h.home, `a "b" $HOME \\ 5%`, "deno.json");
  const command = [program, "--config", config, "gateway", "run"];
  const unit = systemdUnit({ command, environment: { AGENT_HOME: home, PATH: "/usr/bin:/bin" } });
  const value = (key: string) =>
    unit.split("\n").find((l) => l.startsWith(`${key}=`))!.slice(key.length + 1);
  assert.deepEqual(systemdWords(value("ExecStart"), "command"), command);
  assert.deepEqual(systemdWords(value("Environment"), "environment"), [`AGENT_HOME=${home}`]);
  const file = join(h.home, "agent-gateway.service");
  await Deno.writeTextFile(file, unit);
  await systemdVerifies(file);
});

Deno.test("a program path systemd would refuse is refused when the unit is made", () => {
  for (const program of ["/opt/$x/agent", '/opt/"a"/agent', "/opt/a\\b/agent", "/opt/a\tb"]) {
    assert.throws(
      () =>
        systemdUnit({ command: [program, "gateway", "run"], environment: { AGENT_HOME: "/h" } }),
      /systemd cannot run a program whose path holds/,
    );
  }
});

Deno.test("install ignores this shell's own settings, makes carried paths absolute, and sees a gateway still starting", async () => {
  await using h = await tempHome({ config: enabledConfig(0) });
  const systemctl = await fakeSystemctl(h.home);
  const env = { AGENT_HOME: h.home, XDG_CONFIG_HOME: join(h.home, "xdg"), PATH: systemctl.path };
  // A bad WEBHOOK_PORT in this shell would never reach the service.
  const printed = await runCli(["gateway", "install", "--print"], { ...env, WEBHOOK_PORT: "abc" });
  assert.equal(printed.code, 0, printed.stderr);
  // A relative path would be read from the service's working folder: it is made absolute.
  const relative = await runCli(["gateway", "install", "--print"], {
    ...env,
    DENO_CERT: "certs/ca.pem",
  });
  assert.match(
    relative.stdout,
    new RegExp(`^Environment=DENO_CERT=${Deno.cwd()}/certs/ca\\.pem$`, "m"),
  );

  // A gateway that holds the lock but has not yet written where it listens.
  await Deno.mkdir(join(h.home, "state"), { recursive: true });
  using lock = await Deno.open(join(h.home, "state", "gateway.lock"), {
    create: true,
    write: true,
  });
  await lock.lock(true);
  const refused = await runCli(["gateway", "install"], env);
  assert.equal(refused.code, 1, refused.stdout);
  assert.match(refused.stderr, /already running with this home \(starting\)/);
  await lock.unlock();
});
