/**
 * `agent gateway uninstall`, run as the real CLI with a stand-in `systemctl` first on the PATH.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { enabledConfig, runCli, tempHome } from "../_helpers.ts";
import { fakeSystemctl } from "./_systemd_fakes.ts";

Deno.test("uninstall stops, disables and removes the unit; a second uninstall says it is not installed", async () => {
  await using h = await tempHome({ config: enabledConfig(0) });
  const systemctl = await fakeSystemctl(h.home);
  const xdg = join(h.home, "xdg");
  const env = { AGENT_HOME: h.home, XDG_CONFIG_HOME: xdg, PATH: systemctl.path };
  assert.equal((await runCli(["gateway", "install"], env)).code, 0);
  const unitFile = join(xdg, "systemd", "user", "agent-gateway.service");

  const removed = await runCli(["gateway", "uninstall"], env);
  assert.equal(removed.code, 0, removed.stderr);
  assert.match(removed.stdout, /Removed agent-gateway\.service/);
  await assert.rejects(Deno.stat(unitFile), Deno.errors.NotFound);
  assert.deepEqual((await systemctl.calls()).slice(5), [
    "--user disable --now agent-gateway.service",
    "--user daemon-reload",
  ]);

  const again = await runCli(["gateway", "uninstall"], env);
  assert.equal(again.code, 0);
  assert.match(again.stdout, /agent-gateway\.service is not installed/);
});
