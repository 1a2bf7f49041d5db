/**
 * What `bench/peers.ts` needs besides `_shared.ts`: adnanh/webhook as a server, CPU pinning with
 * `taskset`, a paced (fixed-rate) wrk script, and RSS read from `/proc`.
 *
 * @module
 */
import { join } from "node:path";
import { SECRET } from "./_shared.ts";

/**
 * The hooks file of adnanh/webhook (Debian `webhook`): one hook, `agent`, that answers 202 when
 * `X-Hub-Signature-256` holds GitHub's HMAC-SHA256 of the raw body under {@link SECRET}, and 401
 * otherwise (so that wrk counts a mismatch as a non-2xx answer). It runs no command and persists
 * nothing: with no `execute-command`, webhook answers first and then fails to find the command in
 * a goroutine, silently without `-verbose`. Rules:
 * https://github.com/adnanh/webhook/blob/master/docs/Hook-Rules.md
 */
export function webhookHooks(): string {
  return JSON.stringify([{
    id: "agent",
    "execute-command": "",
    "response-message": '{"status":"accepted"}',
    "success-http-response-code": 202,
    "trigger-rule-mismatch-http-response-code": 401,
    "trigger-rule": {
      match: {
        type: "payload-hmac-sha256",
        secret: SECRET,
        parameter: { source: "header", name: "X-Hub-Signature-256" },
      },
    },
  }]);
}

/** A TCP port free on 127.0.0.1 now, for a server that cannot take port 0. */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/**
 * Starts adnanh/webhook on `port` with {@link webhookHooks} and waits until it accepts
 * connections.
 * @param home a folder for the hooks file
 * @param pin the `taskset` arguments that pin it (e.g. `["-c", "0"]`), or none
 * @returns the child and the hook's URL
 * @throws Error when it does not listen within 10 s
 */
export async function spawnWebhook(
  home: string,
  port: number,
  pin: string[],
): Promise<{ child: Deno.ChildProcess; url: string }> {
  const hooks = join(home, "hooks.json");
  await Deno.writeTextFile(hooks, webhookHooks());
  const args = ["-hooks", hooks, "-ip", "127.0.0.1", "-port", String(port)];
  const child = new Deno.Command(pin.length ? "taskset" : "webhook", {
    args: pin.length ? [...pin, "webhook", ...args] : args,
    stdout: "null",
    stderr: "null",
  }).spawn();
  for (let tries = 0; tries < 100; tries++) {
    try {
      (await Deno.connect({ hostname: "127.0.0.1", port })).close();
      return { child, url: `http://127.0.0.1:${port}/hooks/agent` };
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  child.kill("SIGKILL");
  throw new Error(`webhook did not listen on ${port}`);
}

/**
 * Lua for wrk that paces requests at `rate` per second in all, as wrk2 does: every request takes
 * the next slot of one schedule (`start + n / rate`) and waits for it through wrk's `delay()`,
 * so the rate holds whatever the answers' latency, as long as the connections are not all busy.
 * Append it to a script that builds the requests. Latency is measured from the actual send, so
 * a request that is late for its slot does not count its wait (unlike wrk2). wrk's delays are
 * whole milliseconds, so requests leave up to 1 ms late. LuaJIT's FFI reads the clock.
 * @param rate requests per second, over all connections
 */
export function pacing(rate: number): string {
  return `
local ffi = require("ffi")
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
int clock_gettime(int clock, bench_timespec *tp);
]]
local clock = ffi.new("bench_timespec")
local function now_ms()
  ffi.C.clock_gettime(1, clock)
  return tonumber(clock.tv_sec) * 1000 + tonumber(clock.tv_nsec) / 1e6
end
local interval = 1000 / ${rate}
local start = nil
local slot = 0
function delay()
  local now = now_ms()
  if start == nil then start = now end
  slot = slot + 1
  local wait = start + slot * interval - now
  if wait < 0 then return 0 end
  return math.floor(wait + 0.5)
end
`;
}

/** The RSS of process `pid` in MiB (`VmRSS` of `/proc/<pid>/status`). */
export function rssMiB(pid: number): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  return Number(status.match(/VmRSS:\s+(\d+)/)?.[1] ?? 0) / 1024;
}

/**
 * Samples the RSS of `pid` every 250 ms while `work` runs.
 * @returns what `work` returned, the highest RSS seen and the last, in MiB
 */
export async function sampleRss<T>(
  pid: number,
  work: () => Promise<T>,
): Promise<{ result: T; maxMiB: number; lastMiB: number }> {
  let maxMiB = rssMiB(pid);
  let lastMiB = maxMiB;
  const timer = setInterval(() => {
    lastMiB = rssMiB(pid);
    maxMiB = Math.max(maxMiB, lastMiB);
  }, 250);
  try {
    const result = await work();
    return { result, maxMiB, lastMiB };
  } finally {
    clearInterval(timer);
  }
}

/** The machine's CPU time in clock ticks (`/proc/stat`): in all, and stolen by the hypervisor. */
export function machineTicks(): { total: number; steal: number } {
  const values = Deno.readTextFileSync("/proc/stat").split("\n")[0].trim().split(/\s+/)
    .slice(1, 9).map(Number);
  return { total: values.reduce((sum, value) => sum + value, 0), steal: values[7] };
}

/**
 * Pins this process (all its threads), and so the programs it starts from now on (wrk), to
 * CPU 1, and says how to pin a server to CPU 0; nothing when the machine has fewer than 2 CPUs.
 * @returns the `taskset` arguments for a server (`["-c", "0"]`), or none
 */
export function pinToCores(): string[] {
  if (navigator.hardwareConcurrency < 2) return [];
  const done = new Deno.Command("taskset", { args: ["-a", "-pc", "1", String(Deno.pid)] })
    .outputSync();
  if (!done.success) throw new Error("taskset could not pin the benchmark to CPU 1");
  return ["-c", "0"];
}
