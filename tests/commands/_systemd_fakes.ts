/**
 * Stand-ins and readers for the tests of `agent gateway install` and `uninstall`: a fake
 * `systemctl` that records its calls (these machines have no user systemd to talk to), a home
 * whose path needs quoting, and unit files read back as systemd reads them.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { enabledConfig } from "../_helpers.ts";

/** A bin folder holding a fake `systemctl` that logs each call; `FAIL` makes a call fail. */
export async function fakeSystemctl(
  dir: string,
): Promise<{ path: string; calls(): Promise<string[]> }> {
  const bin = join(dir, "bin");
  await Deno.mkdir(bin);
  const log = join(dir, "systemctl.log");
  await Deno.writeTextFile(
    join(bin, "systemctl"),
    `#!/bin/sh
echo "$*" >> '${log}'
if [ "$2" = "is-active" ] && [ -n "$FAKE_SYSTEMCTL_INACTIVE" ]; then
  exit 3
fi
if [ -n "$FAKE_SYSTEMCTL_FAIL" ] && [ "$2" = "$FAKE_SYSTEMCTL_FAIL" ]; then
  echo "Failed to connect to bus: No medium found" >&2
  exit 1
fi
exit 0
`,
    { mode: 0o755 },
  );
  return {
    path: `${bin}:${Deno.env.get("PATH")}`,
    calls: async () => (await Deno.readTextFile(log).catch(() => "")).split("\n").filter(Boolean),
  };
}

/**
 * Splits a unit file's command line or assignment as systemd does (systemd.syntax(7)): blanks
 * separate words, double quotes group them with C-style escapes inside, `%%` is `%` and, in a
 * command, `$$` is `$`. A lone `%` (a specifier systemd would resolve) or, in a command, a lone
 * `$` (a variable it would expand) throws: the word would not reach the program as written.
 */
export function systemdWords(line: string, where: "command" | "environment"): string[] {
  const words: string[] = [];
  let word = "";
  let quoted = false;
  let started = false;
  for (let i = 0; i < line.length; i++) {
    const char = line[i];
    if (quoted && char === "\\") {
      const next = line[++i];
      word += next === "n" ? "\n" : next;
    } else if (char === '"') {
      quoted = !quoted;
      started = true;
    } else if (!quoted && /\s/.test(char)) {
      if (started) words.push(word);
      word = "";
      started = false;
    } else {
      word += char;
      started = true;
    }
  }
  if (started) words.push(word);
  return words.map((w) => {
    if (/%/.test(w.replaceAll("%%", ""))) throw new Error(`unescaped % in ${w}`);
    if (where === "command" && /\$/.test(w.replaceAll("$$", ""))) {
      throw new Error(`unescaped $ in ${w}`);
    }
    const text = w.replaceAll("%%", "%");
    return where === "command" ? text.replaceAll("$$", "$") : text;
  });
}

/** A home whose path needs quoting in a unit file: a blank, `%` and `$`. */
export async function awkwardHome(root: string, config = enabledConfig(0)): Promise<string> {
  const home = join(root, "my home 100% $HOME");
  await Deno.mkdir(home);
  await Deno.writeTextFile(join(home, "config.yaml"), config);
  return home;
}

/** This Deno's cache folder (`deno info --json`). */
export async function denoDir(): Promise<string> {
  const output = await new Deno.Command(Deno.execPath(), { args: ["info", "--json"] }).output();
  return JSON.parse(new TextDecoder().decode(output.stdout)).denoDir;
}

/** Whether systemd's `systemd-analyze` is installed here. */
const hasSystemdAnalyze = new Deno.Command("sh", {
  args: ["-c", "command -v systemd-analyze"],
  stdout: "null",
}).outputSync().success;

/** Asserts that systemd's own checker finds no fatal error in a unit file, where it is installed. */
export async function systemdVerifies(file: string): Promise<void> {
  if (!hasSystemdAnalyze) return;
  const verify = await new Deno.Command("systemd-analyze", {
    args: ["verify", file],
    stdout: "piped",
    stderr: "piped",
  }).output();
  // It returns 0 even when it drops a line ("Invalid environment assignment, ignoring"), so
  // it must say nothing at all.
  const said = new TextDecoder().decode(verify.stderr);
  assert.ok(verify.success && said.trim() === "", said);
}
