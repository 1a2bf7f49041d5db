/**
 * `agent doctor` on `state.backend: postgres` (docs/configuration.md#state): its state line says
 * whether the database can be reached, naming the setting that names it and never the URL.
 */
import assert from "node:assert/strict";
import { runCommand } from "../../commands/mod.ts";
import { StoreUnavailableError } from "../../lib/errors.ts";
import { startPostgres, type ThrowawayPostgres } from "../fakes/postgres.ts";
import { enabledConfig, fakeContext, tempHome } from "../_helpers.ts";

let started: Promise<ThrowawayPostgres> | undefined;
const server = () => started ??= startPostgres();

/** `agent doctor`'s line about the state database. */
async function stateLine(env: Record<string, string>): Promise<string> {
  const ctx = fakeContext(env);
  await runCommand(["doctor"], ctx);
  const lines = [...ctx.out, ...ctx.err].join("\n").split("\n");
  const found = lines.find((line) => /^[✓✗] state: /.test(line));
  assert.ok(found, `no state line in:\n${lines.join("\n")}`);
  return found;
}

Deno.test("doctor on postgres says the database is reachable, or refuses to go on without it, never saying the password", async () => {
  const schema = await (await server()).createSchema();
  await using h = await tempHome({
    config: enabledConfig(0, "state:\n  backend: postgres\n  connect_timeout: 1\n"),
  });
  try {
    const reachable = await stateLine({ AGENT_HOME: h.home, DATABASE_URL: schema.url });
    assert.equal(reachable, "✓ state: PostgreSQL (DATABASE_URL) reachable, its tables ready");
    // Unreachable, the subscriptions kept in it cannot be read either: doctor stops there, with
    // the same message and exit code as every command, and no password.
    const ctx = fakeContext({
      AGENT_HOME: h.home,
      DATABASE_URL: "postgres://agent:s3cret-pw@127.0.0.1:1/agent",
    });
    await assert.rejects(
      () => runCommand(["doctor"], ctx),
      (error: Error) =>
        error instanceof StoreUnavailableError && error.message.includes("127.0.0.1:1/agent") &&
        !error.message.includes("s3cret-pw"),
    );
  } finally {
    await schema.drop();
  }
});

Deno.test("doctor_state_test: the throwaway server stops", async () => {
  await (await started)?.stop();
});
