/**
 * A real headless Chromium for the dashboard's tests: Debian's `chromium` package, installed
 * with apt-get when missing (as `.ci/run` does), driven by npm `playwright-core`.
 *
 * @module
 */
import { type Browser, chromium } from "playwright-core";

/** Where Debian's `chromium` package puts the browser. */
export const CHROMIUM = "/usr/bin/chromium";

/**
 * Installs Debian's `chromium` when it is missing (`apt-get update`, then `apt-get install -y
 * chromium`; the tests run as root, as CI does).
 * @throws Error with apt-get's output when the install fails
 */
export async function ensureChromium(): Promise<void> {
  if (await Deno.stat(CHROMIUM).then(() => true, () => false)) return;
  for (const args of [["update", "-qq"], ["install", "-y", "-qq", "chromium"]]) {
    const result = await new Deno.Command("apt-get", {
      args,
      env: { DEBIAN_FRONTEND: "noninteractive" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!result.success) {
      const output = new TextDecoder().decode(result.stderr);
      throw new Error(`apt-get ${args.join(" ")} failed: cannot install chromium\n${output}`);
    }
  }
}

/**
 * Launches headless Chromium, installing it first when missing.
 * @returns the browser; `await using` closes it
 */
export async function launchChromium(): Promise<Browser & AsyncDisposable> {
  await ensureChromium();
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox"],
  });
  return Object.assign(browser, { [Symbol.asyncDispose]: () => browser.close() });
}
