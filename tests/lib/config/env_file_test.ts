import assert from "node:assert/strict";
import { join } from "node:path";
import { parseEnv } from "node:util";
import { setEnvValues } from "../../../lib/config/env_file.ts";
import { loadConfig } from "../../../lib/config/mod.ts";
import { ConfigError } from "../../../lib/errors.ts";
import { enabledConfig, tempHome } from "../../_helpers.ts";

Deno.test("setEnvValues() replaces keys in place, appends new ones and keeps the rest", async () => {
  await using h = await tempHome({ env: "# comment\nA=1\nexport B=2\nC=3\n" });
  const path = join(h.home, ".env");
  await setEnvValues(path, { B: "two", D: "x y#z" });
  const text = await Deno.readTextFile(path);
  assert.equal(text, "# comment\nA=1\nB=two\nC=3\nD='x y#z'\n");
  assert.deepEqual({ ...parseEnv(text) }, { A: "1", B: "two", C: "3", D: "x y#z" });
});

Deno.test("setEnvValues() quotes values so parseEnv reads them back unchanged", async () => {
  await using h = await tempHome();
  const path = join(h.home, ".env");
  const values = { T1: "123:AB-c_d", T2: `it's`, T3: `say "hi" it's` };
  await setEnvValues(path, values);
  assert.deepEqual({ ...parseEnv(await Deno.readTextFile(path)) }, values);
  assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600);
});

Deno.test("setEnvValues() refuses bad names and multi-line values without writing", async () => {
  await using h = await tempHome({ env: "A=1\n" });
  const path = join(h.home, ".env");
  await assert.rejects(() => setEnvValues(path, { "BAD-NAME": "x" }), /Not a valid variable name/);
  await assert.rejects(() => setEnvValues(path, { A: "two\nlines" }), /must be on one line/);
  assert.equal(await Deno.readTextFile(path), "A=1\n");
});

Deno.test("setEnvValues() run ten times at once keeps every value (setup runs in parallel)", async () => {
  await using h = await tempHome({ env: "# tokens\n" });
  const path = join(h.home, ".env");
  const values = Array.from({ length: 10 }, (_, i) => ({ [`TOKEN_${i}`]: `value-${i}` }));
  await Promise.all(values.map((value) => setEnvValues(path, value)));
  assert.deepEqual({ ...parseEnv(await Deno.readTextFile(path)) }, Object.assign({}, ...values));
});

Deno.test("loadConfig() refuses a .env line that is not KEY=value, naming the line but not its text", async () => {
  await using h = await tempHome({
    env: "# tokens\nOPENAI_API_KEY=sk-1\nTELEGRAM_BOT_TOKEN 123:secret-token\n",
  });
  await assert.rejects(loadConfig({ AGENT_HOME: h.home }), (error: Error) => {
    assert.ok(error instanceof ConfigError);
    assert.match(error.message, /\.env line 3 is not KEY=value \(is the "=" missing\?\)/);
    assert.doesNotMatch(error.message, /secret-token/);
    return true;
  });
  // Comments, blank lines, export and values over several lines are fine.
  await using ok = await tempHome({
    env: "\n  # note\nexport A=1\nB=\"two\nlines\"\nC='x'\nD=`y`\nE=\n",
  });
  const config = await loadConfig({ AGENT_HOME: ok.home });
  assert.equal(config.env.A, "1");
  assert.equal(config.env.B, "two\nlines");
  assert.equal(config.env.E, "");
});

Deno.test("loadConfig() reads a .env saved with a byte-order mark, its first line included", async () => {
  // Editors on Windows start the file with U+FEFF; parseEnv skipped that first line unsaid.
  await using h = await tempHome({
    config: enabledConfig(),
    env: "\uFEFFWEBHOOK_PORT=9006\r\nTELEGRAM_BOT_TOKEN=123:abc\r\n",
  });
  const config = await loadConfig({ AGENT_HOME: h.home });
  assert.equal(config.webhook.port, 9006);
  assert.equal(config.env.TELEGRAM_BOT_TOKEN, "123:abc");
});

for (const line of ["my.key=1", "MY-KEY=1", "1PASSWORD_ITEM=x", "$A=1"]) {
  Deno.test(`loadConfig() takes a .env name parseEnv takes: ${line}`, async () => {
    await using h = await tempHome({ env: `OPENAI_API_KEY=sk-1\n${line}\n` });
    assert.equal((await loadConfig({ AGENT_HOME: h.home })).env.OPENAI_API_KEY, "sk-1");
  });
}
