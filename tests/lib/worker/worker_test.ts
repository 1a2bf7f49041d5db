import assert from "node:assert/strict";
import {
  AgentError,
  NotFoundError,
  StoreUnavailableError,
  TargetError,
} from "../../../lib/errors.ts";
import type { NewEvent, StateStore } from "../../../lib/state/mod.ts";
import { openStateStore } from "../../../lib/state/sqlite/mod.ts";
import type {
  DeliveryJob,
  DeliveryReceipt,
  OnPartSent,
  SentPart,
} from "../../../lib/targets/mod.ts";
import {
  ABORT_GRACE_MS,
  createWorker,
  STORE_REFUSED_RETRY_MS,
  type WorkerDeps,
} from "../../../lib/worker/mod.ts";
import { newEvent } from "../state/_fixtures.ts";
import {
  type AgentAnswer,
  type AgentSettings,
  createAgentRunner,
} from "../../../lib/agents/mod.ts";
import { eventually } from "../../_helpers.ts";

const T0 = 1_700_000_000_000;
/** What a fake delivery answers. */
const RECEIPT: DeliveryReceipt = { target: "telegram", parts: 1, destination: "chat 123" };

/** A clock and timers that move only when the test says so. */
function fakeTime() {
  let now = T0;
  let timers: { at: number; callback: () => void }[] = [];
  return {
    now: () => now,
    setTimer(callback: () => void, delayMs: number) {
      const timer = { at: now + delayMs, callback };
      timers.push(timer);
      return () => void (timers = timers.filter((t) => t !== timer));
    },
    /** How many timers are set. */
    pending: () => timers.length,
    /** Moves the clock and fires the timers that came due, earliest first. */
    advance(ms: number) {
      now += ms;
      const due = timers.filter((t) => t.at <= now).sort((a, b) => a.at - b.at);
      timers = timers.filter((t) => t.at > now);
      for (const timer of due) timer.callback();
    },
  };
}

/** A part as a fake delivery reports it sent. */
const SENT: SentPart = { target: "telegram", destination: "123", messageId: "9" };

/** A runner's answer of `text`, without model or token counts. */
function answer(text: string): AgentAnswer {
  return { provider: "command", text };
}

/** The store tests' event, sent to Telegram chat 123 about issue 7. */
function event(overrides: Partial<NewEvent> = {}): NewEvent {
  return newEvent({
    payload: JSON.stringify({ issue: { number: 7 } }),
    prompt: "Triage issue 7",
    route: { deliver: "telegram", chatId: "123", skills: ["triage"] },
    receivedAtMs: T0,
    ...overrides,
  });
}

interface Harness {
  store: StateStore;
  time: ReturnType<typeof fakeTime>;
  worker: ReturnType<typeof createWorker>;
  jobs: DeliveryJob[];
  prompts: { prompt: string; systemPrompt?: string }[];
  logs: { level: string; message: string; props: Record<string, unknown> }[];
}

/** A worker over an in-memory store; `agent` and `deliver` default to success. */
async function withWorker(
  overrides: Partial<WorkerDeps>,
  body: (h: Harness) => Promise<void>,
): Promise<void> {
  const store = openStateStore(":memory:");
  const time = fakeTime();
  const jobs: DeliveryJob[] = [];
  const prompts: Harness["prompts"] = [];
  const logs: Harness["logs"] = [];
  const worker = createWorker({
    store,
    runAgent: ({ signal: _, ...request }) => {
      prompts.push(request);
      return Promise.resolve(answer(`answer to ${request.prompt}`));
    },
    deliver: (job) => {
      jobs.push(job);
      return Promise.resolve(RECEIPT);
    },
    systemPrompt: (skills) => Promise.resolve(`base + ${skills.join(",")}`),
    now: time.now,
    monotonicNow: time.now,
    random: () => 0.5,
    setTimer: time.setTimer,
    log: (level, message, props) => logs.push({ level, message, props }),
    ...overrides,
  });
  try {
    await body({ store, time, worker, jobs, prompts, logs });
  } finally {
    await worker.stop({ deadlineMs: 0 });
    await store.close();
  }
}

async function accept(store: StateStore, overrides: Partial<NewEvent> = {}): Promise<string> {
  const result = await store.accept(event(overrides));
  assert.equal(result.status, "accepted");
  return result.eventId!;
}

/** Moves the clock to the next due event, lets the worker run it, until nothing is due. */
async function runUntilSettled(h: Harness): Promise<void> {
  await h.worker.idle();
  for (let due = await h.store.nextDueAtMs(); due !== null; due = await h.store.nextDueAtMs()) {
    h.time.advance(Math.max(0, due - h.time.now()));
    await h.worker.idle();
  }
}

/**
 * Gives the event loop up to 100 turns for `condition` to hold: the worker yields between
 * events (setImmediate), so how many timer turns a step takes is not fixed.
 */
async function turnsUntil(condition: () => boolean | Promise<boolean>): Promise<void> {
  for (let turn = 0; !(await condition()); turn++) {
    if (turn === 100) throw new Error(`not true after 100 turns: ${condition}`);
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
}

/**
 * Moves the clock on a store rest at a time ({@link STORE_REFUSED_RETRY_MS}: the worker leaves a
 * store that refused a write alone that long) until `condition` holds, at most 5 rests.
 */
async function restsUntil(
  h: Harness,
  condition: () => boolean | Promise<boolean>,
): Promise<void> {
  for (let rest = 0; !(await condition()); rest++) {
    if (rest === 5) throw new Error(`not true after 5 rests: ${condition}`);
    h.time.advance(STORE_REFUSED_RETRY_MS);
    for (let turn = 0; turn < 10 && !(await condition()); turn++) {
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
  }
}

Deno.test("worker runs the agent with the skills' system prompt and delivers the answer", async () => {
  await withWorker({}, async (h) => {
    const id = await accept(h.store);
    h.worker.start();
    await h.worker.idle();
    assert.deepEqual(h.prompts, [
      { prompt: "Triage issue 7", systemPrompt: "base + triage", eventId: id },
    ]);
    assert.deepEqual(h.jobs, [{
      target: "telegram",
      chatId: "123",
      text: "answer to Triage issue 7",
      format: "markdown",
      payload: { issue: { number: 7 } },
      source: "github",
      subscription: "gh",
      eventLabel: "issues",
      eventId: id,
      deliveryId: (await h.store.getEvent(id))!.deliveryId,
      partsAlreadySent: 0,
    }]);
    const stored = (await h.store.getEvent(id))!;
    assert.equal(stored.status, "delivered");
    assert.equal(stored.response, "answer to Triage issue 7");
    assert.deepEqual(h.logs.map((l) => l.message), ["agent run ok", "delivered"]);
  });
});

Deno.test("worker retries a failed agent run after the backoff, then delivers", async () => {
  let calls = 0;
  const runAgent = () => {
    calls += 1;
    return calls === 1
      ? Promise.reject(new AgentError("503 overloaded"))
      : Promise.resolve(answer("ok"));
  };
  await withWorker({ runAgent, retry: { initialDelayMs: 10_000 } }, async (h) => {
    const id = await accept(h.store);
    h.worker.start();
    await h.worker.idle();
    const queued = (await h.store.getEvent(id))!;
    assert.equal(queued.status, "queued");
    assert.equal(queued.nextAttemptAtMs, T0 + 7_500, "equal jitter: 5 s + 0.5 * 5 s");
    const retry = h.logs.find((l) => l.message === "retry scheduled")!;
    assert.equal(retry.props.attempt, 1);
    assert.equal(retry.props.delayMs, 7_500);

    h.time.advance(7_499);
    await h.worker.idle();
    assert.equal(calls, 1, "not before the delay");
    h.time.advance(1);
    await h.worker.idle();
    assert.equal((await h.store.getEvent(id))!.status, "delivered");
    assert.deepEqual((await h.store.attempts(id)).map((a) => a.error), ["503 overloaded", null]);
  });
});

Deno.test("worker waits at least the Retry-After of a 429", async () => {
  const runAgent = () => Promise.reject(new AgentError("429", { retryAfterSeconds: 120 }));
  await withWorker({ runAgent, retry: { initialDelayMs: 1_000 } }, async (h) => {
    const id = await accept(h.store);
    h.worker.start();
    await h.worker.idle();
    assert.ok((await h.store.getEvent(id))!.nextAttemptAtMs! - T0 >= 120_000);
  });
});

Deno.test("after the LLM endpoint fails two runs in a row, new agent runs wait; deliveries do not", async () => {
  let up = false;
  let calls = 0;
  const runAgent = () => {
    calls += 1;
    const down = new AgentError("503", { unavailable: true, retryAfterSeconds: 5 });
    return up ? Promise.resolve(answer("ok")) : Promise.reject(down);
  };
  await withWorker(
    { runAgent, maxConcurrency: 1, retry: { initialDelayMs: 20_000 } },
    async (h) => {
      const ids = [
        await accept(h.store, { deliveryId: "d-1" }),
        await accept(h.store, { deliveryId: "d-2" }),
      ];
      h.worker.start();
      await turnsUntil(() => calls === 2);
      await h.worker.idle();
      // Events accepted during the pause wait in the queue, their attempts unspent...
      for (const n of [3, 4, 5]) ids.push(await accept(h.store, { deliveryId: `d-${n}` }));
      h.worker.notify();
      // ...but a replayed direct message, which needs no agent, goes out at the next poll.
      const direct = event({ mode: "direct", prompt: "Deploy finished", deliveryId: "d-direct" });
      const directId = await h.store.recordDirect(direct, {
        delivered: false,
        error: "502",
        partsSent: 0,
      });
      await h.store.replay(directId, h.time.now());
      h.time.advance(1_000);
      await turnsUntil(() => h.jobs.length === 1);
      assert.equal(h.jobs[0].text, "Deploy finished");
      h.time.advance(3_999);
      await h.worker.idle();
      assert.equal(
        calls,
        2,
        "no agent run starts during the pause (the endpoint's Retry-After, 5 s)",
      );
      assert.deepEqual(
        (await Promise.all(ids.slice(2).map((id) => h.store.getEvent(id)))).map((e) => e!.attempts),
        [0, 0, 0],
      );
      h.time.advance(1);
      await turnsUntil(() => calls === 3);
      await h.worker.idle();
      assert.equal(calls, 3, "one try per pause while the endpoint is down");
      up = true;
      h.time.advance(5_000);
      await turnsUntil(() => calls >= 4);
      await h.worker.idle();
      assert.equal(calls, 5, "once it answers, the rest run at once");
      assert.deepEqual(
        (await Promise.all(ids.slice(3).map((id) => h.store.getEvent(id)))).map((e) => e!.status),
        [
          "delivered",
          "delivered",
        ],
      );
    },
  );
});

Deno.test("a command agent that exits 1 for two events in a row pauses new runs, as an endpoint down does", async () => {
  // The real runner and a real program: each start of a broken agent costs a process, which
  // under a burst of events had cut ingest to a twentieth.
  const settings: AgentSettings = {
    provider: "command",
    model: "",
    command: ["false"],
    timeoutSeconds: 30,
  };
  const runAgent = createAgentRunner(settings, { fetch, env: { PATH: Deno.env.get("PATH") } });
  let calls = 0;
  const counted: typeof runAgent = (request) => {
    calls += 1;
    return runAgent(request);
  };
  await withWorker(
    { runAgent: counted, maxConcurrency: 1, retry: { initialDelayMs: 10_000 } },
    async (h) => {
      const ids: string[] = [];
      for (const n of [1, 2, 3, 4]) ids.push(await accept(h.store, { deliveryId: `d-${n}` }));
      h.worker.start();
      await eventually(() => h.logs.filter((l) => l.message === "retry scheduled").length >= 2);
      await h.worker.idle();
      assert.equal(calls, 2, "the others wait for the pause (1 s), their attempts unspent");
      assert.deepEqual(
        (await Promise.all(ids.map((id) => h.store.getEvent(id)))).map((e) => e!.attempts),
        [1, 1, 0, 0],
      );
      h.time.advance(1_000);
      await eventually(() => calls === 3);
      await h.worker.idle();
      assert.equal(calls, 3, "one try a pause while the program fails");
    },
  );
});

Deno.test("one event's own retries failing at the endpoint pause nothing", async () => {
  let calls = 0;
  let failing = "";
  const runAgent = ({ eventId }: { eventId: string }) => {
    calls += 1;
    return eventId === failing
      ? Promise.reject(new AgentError("503", { unavailable: true }))
      : Promise.resolve(answer("ok"));
  };
  await withWorker(
    { runAgent, maxConcurrency: 1, retry: { initialDelayMs: 10_000 } },
    async (h) => {
      failing = await accept(h.store, { deliveryId: "d-1" });
      h.worker.start();
      await turnsUntil(() => calls === 1);
      await h.worker.idle();
      h.time.advance(7_500); // its retry, which fails too
      await turnsUntil(() => calls === 2);
      await h.worker.idle();
      await accept(h.store, { deliveryId: "d-2" });
      h.worker.notify();
      await turnsUntil(() => calls === 3);
    },
  );
});

Deno.test("an endpoint failure between successes pauses nothing: it may be the prompt's own", async () => {
  let calls = 0;
  const runAgent = () => {
    calls += 1;
    // A proxy in front of the endpoint answers 502 to every other prompt.
    return calls % 2 === 1
      ? Promise.reject(new AgentError("502 Bad Gateway", { unavailable: true }))
      : Promise.resolve(answer("ok"));
  };
  await withWorker({ runAgent, maxConcurrency: 1 }, async (h) => {
    for (const n of [1, 2, 3, 4, 5, 6]) await accept(h.store, { deliveryId: `d-${n}` });
    h.worker.start();
    await turnsUntil(() => calls === 6);
    assert.equal(h.time.now(), T0, "all at once");
  });
});

Deno.test("a run that succeeds ends the pause another run's failure began", async () => {
  const answers: PromiseWithResolvers<AgentAnswer>[] = [];
  const runAgent = () => {
    answers.push(Promise.withResolvers<AgentAnswer>());
    return answers.at(-1)!.promise;
  };
  await withWorker({ runAgent, maxConcurrency: 3 }, async (h) => {
    for (const n of [1, 2, 3, 4]) await accept(h.store, { deliveryId: `d-${n}` });
    h.worker.start();
    await turnsUntil(() => answers.length === 3);
    for (const answer of answers.slice(0, 2)) {
      answer.reject(new AgentError("503 overloaded", { unavailable: true }));
    }
    await turnsUntil(() => h.logs.filter((l) => l.message === "retry scheduled").length === 2);
    assert.equal(answers.length, 3, "the fourth waits for the pause");
    answers[2].resolve(answer("ok"));
    await turnsUntil(() => answers.length === 4);
    assert.equal(h.time.now(), T0, "at once, not after the second");
    answers[3].resolve(answer("ok"));
  });
});

Deno.test("a pause after a failed agent run ends if the clock is set back", async () => {
  let calls = 0;
  const runAgent = () => {
    calls += 1;
    return Promise.reject(new AgentError("connection refused", { unavailable: true }));
  };
  const time = fakeTime();
  let shift = 0;
  await withWorker({ runAgent, maxConcurrency: 1, now: () => time.now() + shift }, async (h) => {
    await accept(h.store, { deliveryId: "d-1" });
    await accept(h.store, { deliveryId: "d-2" });
    h.worker.start();
    await turnsUntil(() => calls === 2);
    await h.worker.idle();
    await accept(h.store, { deliveryId: "d-3", receivedAtMs: T0 - 3_600_000 });
    shift = -3_600_000; // NTP sets the clock back an hour
    h.worker.notify();
    await turnsUntil(() => calls === 3);
    await h.worker.idle();
    // Set back by less than the longest pause (5 s here), a 1 s pause still does not grow.
    await accept(h.store, { deliveryId: "d-4", receivedAtMs: T0 - 3_600_000 - 4_000 });
    shift -= 4_000;
    h.worker.notify();
    await turnsUntil(() => calls === 4);
  });
});

Deno.test("an event queued before the clock was set back is due as soon after it, not an hour later", async () => {
  let calls = 0;
  const runAgent = () => {
    calls += 1;
    return calls === 1
      ? Promise.reject(new AgentError("LLM answered 502"))
      : Promise.resolve(answer("ok"));
  };
  const time = fakeTime();
  let shift = 0;
  const clocks = { now: () => time.now() + shift, monotonicNow: time.now, setTimer: time.setTimer };
  await withWorker({ runAgent, retry: { initialDelayMs: 10_000 }, ...clocks }, async (h) => {
    await accept(h.store, { deliveryId: "d-1" });
    h.worker.start();
    await turnsUntil(() => calls === 1);
    await h.worker.idle();
    shift = -3_600_000; // NTP sets the clock back an hour
    time.advance(20_000); // the retry's delay, and more
    await turnsUntil(() => calls === 2);
    await h.worker.idle();
    assert.equal(h.jobs.length, 1, "delivered after its retry");
    assert.ok(h.logs.some((line) => line.message.startsWith("the clock was set back")));
  });
});

Deno.test("a Retry-After from the agent's endpoint holds new events up to half the first retry delay", async () => {
  let calls = 0;
  const runAgent = () => {
    calls += 1;
    return Promise.reject(new AgentError("429", { retryAfterSeconds: 3, unavailable: true }));
  };
  await withWorker({ runAgent, maxConcurrency: 1, retry: { initialDelayMs: 4_000 } }, async (h) => {
    await accept(h.store, { deliveryId: "d-1" });
    await accept(h.store, { deliveryId: "d-2" });
    h.worker.start();
    await turnsUntil(() => calls === 2);
    await h.worker.idle();
    await accept(h.store, { deliveryId: "d-3" });
    h.time.advance(1_999);
    await h.worker.idle();
    assert.equal(calls, 2, "held for min(3 s, 4 s / 2)");
    h.time.advance(1);
    await turnsUntil(() => calls === 3);
  });
});

Deno.test("a failure of the event's own (permanent, a command's exit, a delivery) holds nothing up", async () => {
  for (
    const failure of [
      new AgentError("400 prompt too long", { permanent: true }),
      new AgentError('The agent command "triage" exited with code 1'),
      new AgentError("The model returned an empty answer (finish_reason: content_filter)"),
    ]
  ) {
    let calls = 0;
    const runAgent = () => {
      calls += 1;
      return Promise.reject(failure);
    };
    await withWorker({ runAgent, maxConcurrency: 1 }, async (h) => {
      for (const n of [1, 2, 3]) await accept(h.store, { deliveryId: `d-${n}` });
      h.worker.start();
      await turnsUntil(() => calls === 3);
    });
  }
  let deliveries = 0;
  const deliver = () => {
    deliveries += 1;
    return Promise.reject(new TargetError("502 from Telegram"));
  };
  await withWorker({ deliver, maxConcurrency: 1 }, async (h) => {
    for (const n of [1, 2, 3]) await accept(h.store, { deliveryId: `d-${n}` });
    h.worker.start();
    await turnsUntil(() => deliveries === 3);
  });
});

Deno.test("worker dead-letters a permanent failure at once", async () => {
  const deliver = () => Promise.reject(new TargetError("chat not found", { permanent: true }));
  await withWorker({ deliver }, async (h) => {
    const id = await accept(h.store);
    h.worker.start();
    await runUntilSettled(h);
    const stored = (await h.store.getEvent(id))!;
    assert.equal(stored.status, "failed");
    assert.equal(stored.attempts, 1);
    assert.equal(stored.lastError, "chat not found");
    const failed = h.logs.find((l) => l.message === "failed")!;
    assert.equal(failed.level, "error");
    assert.equal(failed.props.step, "delivery");
  });
});

Deno.test("worker dead-letters an event whose skill is no longer installed", async () => {
  const systemPrompt = () => Promise.reject(new NotFoundError('Unknown skill "triage"'));
  await withWorker({ systemPrompt }, async (h) => {
    const id = await accept(h.store);
    h.worker.start();
    await h.worker.idle();
    assert.equal((await h.store.getEvent(id))!.status, "failed");
    assert.equal(h.prompts.length, 0);
  });
});

Deno.test("worker gives up after maxAttempts and keeps every attempt's error", async () => {
  let calls = 0;
  const runAgent = () => Promise.reject(new AgentError(`timeout #${++calls}`));
  await withWorker({ runAgent, retry: { maxAttempts: 5 } }, async (h) => {
    const id = await accept(h.store);
    h.worker.start();
    await runUntilSettled(h);
    assert.equal(calls, 5);
    assert.equal((await h.store.getEvent(id))!.status, "failed");
    assert.deepEqual(
      (await h.store.attempts(id)).map((a) => a.error),
      ["timeout #1", "timeout #2", "timeout #3", "timeout #4", "timeout #5"],
    );
    const delays = h.logs.filter((l) => l.message === "retry scheduled").map((l) =>
      l.props.delayMs
    );
    assert.deepEqual(delays, [7_500, 15_000, 30_000, 60_000], "doubling with jitter");
    assert.equal(h.logs.at(-1)!.message, "failed");
  });
});

Deno.test("worker does not run the agent again when only the delivery failed", async () => {
  let deliveries = 0;
  const texts: string[] = [];
  const deliver = (job: DeliveryJob) => {
    texts.push(job.text);
    return ++deliveries === 1
      ? Promise.reject(new TargetError("502 from Slack"))
      : Promise.resolve(RECEIPT);
  };
  await withWorker({ deliver }, async (h) => {
    const id = await accept(h.store);
    h.worker.start();
    await runUntilSettled(h);
    assert.equal(h.prompts.length, 1);
    assert.deepEqual(texts, ["answer to Triage issue 7", "answer to Triage issue 7"]);
    assert.equal((await h.store.getEvent(id))!.status, "delivered");
    assert.deepEqual((await h.store.attempts(id)).map((a) => [a.step, a.error]), [
      ["delivery", "502 from Slack"],
      ["delivery", null],
    ]);
  });
});

Deno.test("the agent's answer is stored before its delivery: a gateway that dies while sending does not run the agent again", async () => {
  // The first gateway's delivery never ends: it dies while sending.
  const hanging = Promise.withResolvers<DeliveryReceipt>();
  await withWorker({ deliver: () => hanging.promise }, async (h) => {
    const id = await accept(h.store);
    h.worker.start();
    await turnsUntil(() => h.prompts.length === 1);
    await turnsUntil(async () => (await h.store.getEvent(id))!.response !== null);
    assert.equal((await h.store.getEvent(id))!.response, "answer to Triage issue 7");
    assert.equal((await h.store.getEvent(id))!.status, "running");

    // The next start, on the same database: it delivers the stored answer.
    let agentRuns = 0;
    const delivered: string[] = [];
    const next = createWorker({
      store: h.store,
      runAgent: () => Promise.resolve(answer(`a second answer (run ${++agentRuns})`)),
      deliver: (job) => (delivered.push(job.text), Promise.resolve(RECEIPT)),
      systemPrompt: () => Promise.resolve("base"),
      now: h.time.now,
      random: () => 0.5,
      setTimer: h.time.setTimer,
      log: () => {},
    });
    next.start();
    await next.idle();
    await next.stop({ deadlineMs: 0 });
    assert.equal(agentRuns, 0);
    assert.deepEqual(delivered, ["answer to Triage issue 7"]);
    assert.equal((await h.store.getEvent(id))!.status, "delivered");
    hanging.resolve(RECEIPT);
  });
});

Deno.test("worker resumes a split message after the parts already sent", async () => {
  const seen: (number | undefined)[] = [];
  const deliver = (job: DeliveryJob, onPartSent: OnPartSent) => {
    seen.push(job.partsAlreadySent);
    if (seen.length === 1) {
      onPartSent(1, 3, SENT);
      onPartSent(2, 3, SENT);
      return Promise.reject(new TargetError("429", { retryAfterSeconds: 30 }));
    }
    return Promise.resolve(RECEIPT);
  };
  await withWorker({ deliver }, async (h) => {
    const id = await accept(h.store);
    h.worker.start();
    await h.worker.idle();
    assert.equal((await h.store.getEvent(id))!.partsSent, 2);
    await runUntilSettled(h);
    assert.deepEqual(seen, [0, 2]);
  });
});

Deno.test("attempts that deliver part of a long answer before a rate limit do not count toward maxAttempts", async () => {
  // 16 parts; the platform takes 3, then rate-limits longer than an attempt waits: every attempt
  // moves the message on, so it is delivered whole instead of dead-lettered after 3 attempts.
  const PARTS = 16;
  const seen: number[] = [];
  const deliver = (job: DeliveryJob, onPartSent: OnPartSent) => {
    const from = job.partsAlreadySent ?? 0;
    seen.push(from);
    const to = Math.min(PARTS, from + 3);
    for (let part = from + 1; part <= to; part++) onPartSent(part, PARTS, SENT);
    return to === PARTS
      ? Promise.resolve(RECEIPT)
      : Promise.reject(new TargetError("Slack rate limited", { retryAfterSeconds: 31 }));
  };
  await withWorker({ deliver, retry: { maxAttempts: 3 } }, async (h) => {
    const id = await accept(h.store);
    h.worker.start();
    await runUntilSettled(h);
    const stored = (await h.store.getEvent(id))!;
    assert.equal(stored.status, "delivered", stored.lastError ?? "");
    assert.deepEqual(seen, [0, 3, 6, 9, 12, 15]);
    assert.equal(stored.attempts, 6);
    assert.equal(stored.uncountedAttempts, 5, "the last attempt, which got the rest out, counts");
    const retries = h.logs.filter((l) => l.message === "retry scheduled");
    assert.equal(retries.length, 5);
    assert.ok(retries.every((l) => l.props.counted === false && l.props.delayMs === 31_000));
  });
});

Deno.test("attempts that deliver nothing still count, after attempts that made progress", async () => {
  let calls = 0;
  const deliver = (_job: DeliveryJob, onPartSent: OnPartSent) => {
    if (++calls === 1) onPartSent(1, 2, SENT); // part 1 goes out, then the platform fails for good
    return Promise.reject(new TargetError("Telegram answered 502"));
  };
  await withWorker({ deliver, retry: { maxAttempts: 3 } }, async (h) => {
    const id = await accept(h.store);
    h.worker.start();
    await runUntilSettled(h);
    const stored = (await h.store.getEvent(id))!;
    assert.equal(stored.status, "failed");
    assert.equal(calls, 4, "the first attempt did not count; three more did");
    assert.equal(stored.uncountedAttempts, 1);
    assert.equal(h.logs.at(-1)!.props.reason, "3 attempts");
  });
});

Deno.test("a replayed direct message that the sender's retry delivered meanwhile is not sent again", async () => {
  await withWorker({}, async (h) => {
    const message = event({ mode: "direct", deliveryId: "raced", prompt: "the message" });
    const failed = await h.store.recordDirect(message, {
      delivered: false,
      error: "502",
      partsSent: 0,
    });
    await h.store.replay(failed, T0);
    // The sender's retry goes through before the worker picks the replay up.
    const delivered = await h.store.recordDirect(message, { delivered: true, partsSent: 1 });
    h.worker.start();
    await runUntilSettled(h);
    assert.equal(h.jobs.length, 0, "nothing sent by the replay");
    const replayed = (await h.store.getEvent(failed))!;
    assert.equal(replayed.status, "failed");
    assert.match(
      replayed.lastError ?? "",
      new RegExp(`delivered meanwhile, as event ${delivered}`),
    );
  });
});

Deno.test("worker keeps at most maxConcurrency events in progress", async () => {
  let active = 0;
  let peak = 0;
  const gates: (() => void)[] = [];
  const runAgent = () => {
    active += 1;
    peak = Math.max(peak, active);
    return new Promise<AgentAnswer>((resolve) =>
      gates.push(() => (active -= 1, resolve(answer("ok"))))
    );
  };
  await withWorker({ runAgent, maxConcurrency: 2 }, async (h) => {
    for (let i = 0; i < 5; i++) await accept(h.store);
    h.worker.start();
    h.worker.notify();
    await turnsUntil(() => active === 2); // each event starts on a macrotask
    assert.equal(active, 2);
    assert.equal((await h.store.listEvents({ status: "running" })).length, 2);
    const done = h.worker.idle();
    while (h.jobs.length < 5) {
      gates.shift()?.();
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
    await done;
    assert.equal(peak, 2);
    assert.equal((await h.store.listEvents({ status: "delivered" })).length, 5);
  });
});

Deno.test("worker.stop() waits up to the deadline, stops the agent run and leaves queued events queued", async () => {
  let release: ((value: AgentAnswer) => void) | undefined;
  let aborted = false;
  const runAgent = ({ signal }: { signal?: AbortSignal }) =>
    new Promise<AgentAnswer>((resolve, reject) => {
      release = resolve;
      signal?.addEventListener("abort", () => {
        aborted = true;
        reject(new Error("stopped"));
      });
    });
  await withWorker({ runAgent, maxConcurrency: 1 }, async (h) => {
    const first = await accept(h.store);
    const second = await accept(h.store);
    h.worker.start();
    await turnsUntil(() => release !== undefined); // the first event reaches the agent
    let stopped = false;
    const stopping = h.worker.stop({ deadlineMs: 5_000 }).then(() => (stopped = true));
    await Promise.resolve();
    assert.equal(stopped, false, "waits for the event in progress");
    assert.equal(aborted, false, "the run is not stopped before the deadline");
    h.time.advance(5_000);
    await stopping;
    assert.equal(aborted, true, "the run still going at the deadline is stopped");
    assert.equal(
      (await h.store.getEvent(first))!.status,
      "queued",
      "back in the queue for the next start",
    );
    assert.equal((await h.store.getEvent(first))!.attempts, 1, "the interrupted attempt counts");
    assert.match(
      (await h.store.attempts(first))[0].error ?? "",
      /interrupted: the gateway stopped/,
    );
    assert.equal((await h.store.getEvent(second))!.status, "queued");
    h.worker.notify();
    h.time.advance(60_000);
    await Promise.resolve();
    assert.equal((await h.store.getEvent(first))!.status, "queued", "no claim after stop");
    assert.equal((await h.store.getEvent(second))!.status, "queued", "no claim after stop");
    release!(answer("late answer"));
    await new Promise((resolve) => setTimeout(resolve, 0));
  });
});

Deno.test("worker.stop() stops the agent run at once when hurried", async () => {
  let runs = 0;
  const runAgent = ({ signal }: { signal?: AbortSignal }) =>
    new Promise<AgentAnswer>((_, reject) => {
      runs += 1;
      signal?.addEventListener("abort", () => reject(new Error("stopped")));
    });
  await withWorker({ runAgent, maxConcurrency: 1 }, async (h) => {
    const id = await accept(h.store);
    h.worker.start();
    await turnsUntil(() => runs === 1); // the run is under way
    const hurry = new AbortController();
    let stopped = false;
    const stopping = h.worker.stop({ deadlineMs: 60_000, hurry: hurry.signal })
      .then(() => (stopped = true));
    await new Promise((resolve) => setTimeout(resolve, 0));
    assert.equal(stopped, false, "waits for the run");
    hurry.abort(); // a second Ctrl-C; the clock does not move
    await stopping;
    assert.equal(
      (await h.store.getEvent(id))!.status,
      "queued",
      "back in the queue for the next start",
    );
    assert.equal((await h.store.getEvent(id))!.uncountedAttempts, 1, "the stop's, not the event's");
    assert.ok(h.logs.some((l) => l.message === "agent run stopped by shutdown"));
  });
});

Deno.test("a stop that cannot requeue its stopped run at once tries again before it ends", async () => {
  const runAgent = ({ signal }: { signal?: AbortSignal }) =>
    new Promise<AgentAnswer>((_, reject) =>
      signal?.addEventListener("abort", () => reject(new Error("x")))
    );
  await withWorker({ runAgent, maxConcurrency: 1 }, async (h) => {
    const id = await accept(h.store);
    h.worker.start();
    await turnsUntil(async () => (await h.store.getEvent(id))!.status === "running");
    failNext(h.store, "recoverInterrupted", 1); // locked at the moment of the stop
    const hurry = new AbortController();
    const stopping = h.worker.stop({ deadlineMs: 60_000, hurry: hurry.signal });
    hurry.abort();
    await stopping;
    assert.equal((await h.store.getEvent(id))!.status, "queued", "the held requeue was written");
  });
});

Deno.test("a missing skill found after a stop began still fails the event, not requeued", async () => {
  let refuse: ((error: Error) => void) | undefined;
  const systemPrompt = () => new Promise<string>((_, reject) => (refuse = reject));
  await withWorker({ systemPrompt, maxConcurrency: 1 }, async (h) => {
    const id = await accept(h.store);
    h.worker.start();
    await turnsUntil(() => refuse !== undefined); // loading the skills
    const hurry = new AbortController();
    const stopping = h.worker.stop({ deadlineMs: 60_000, hurry: hurry.signal });
    hurry.abort();
    await new Promise((resolve) => setTimeout(resolve, 0));
    refuse!(new NotFoundError('Unknown skill "triage"'));
    await stopping;
    assert.equal(
      (await h.store.getEvent(id))!.status,
      "failed",
      "retrying cannot bring the skill back",
    );
    assert.match((await h.store.getEvent(id))!.lastError ?? "", /Unknown skill "triage"/);
  });
});

Deno.test("worker.stop() gives up on an agent run that ignores the stop after a grace period", async () => {
  let release: ((value: AgentAnswer) => void) | undefined;
  const runAgent = () => new Promise<AgentAnswer>((resolve) => (release = resolve));
  await withWorker({ runAgent, maxConcurrency: 1 }, async (h) => {
    const id = await accept(h.store);
    h.worker.start();
    await turnsUntil(() => release !== undefined); // the run is under way
    let stopped = false;
    const stopping = h.worker.stop({ deadlineMs: 1_000 }).then(() => (stopped = true));
    h.time.advance(1_000);
    await turnsUntil(() => h.time.pending() > 0); // the grace timer
    assert.equal(stopped, false, "waits for the aborted run");
    h.time.advance(ABORT_GRACE_MS);
    await stopping;
    assert.equal((await h.store.getEvent(id))!.status, "running");
    assert.ok(h.logs.some((l) => l.message === "worker stopped with events in progress"));
    release!(answer("late answer")); // lets the run end before the harness closes the store
    await turnsUntil(async () => (await h.store.getEvent(id))!.status !== "running");
  });
});

/** Makes `method` of the store throw StoreUnavailableError on its next `times` calls. */
function failNext(
  store: StateStore,
  method: "markDelivered" | "markRetry" | "savePartsSent" | "saveResponse" | "recoverInterrupted",
  times: number,
) {
  const real = store[method] as (...args: unknown[]) => void;
  let left = times;
  (store as unknown as Record<string, unknown>)[method] = (...args: unknown[]) => {
    if (left > 0) {
      left -= 1;
      throw new StoreUnavailableError("State database error: database is locked");
    }
    return real(...args);
  };
}

Deno.test("worker records a delivery the store could not record at first, without sending it again", async () => {
  await withWorker({}, async (h) => {
    const id = await accept(h.store);
    failNext(h.store, "markDelivered", 3);
    h.worker.start();
    await turnsUntil(() =>
      h.logs.some((l) => l.message === "cannot record the outcome yet; trying again")
    );
    assert.equal((await h.store.getEvent(id))!.status, "running", "not recorded yet");
    await restsUntil(h, async () => (await h.store.getEvent(id))!.status === "delivered");
    assert.equal(h.jobs.length, 1, "the message was sent once");
    assert.ok(h.logs.some((l) => l.message === "outcome recorded"));
  });
});

Deno.test("after the store refused a claim, the worker leaves it alone for a while, new events or not", async () => {
  await withWorker({}, async (h) => {
    const id = await accept(h.store);
    const claimDue = h.store.claimDue;
    let claims = 0;
    let locked = true;
    h.store.claimDue = (...args) => {
      claims += 1;
      if (locked) throw new StoreUnavailableError("State database error: database is locked");
      return claimDue(...args);
    };
    h.worker.start();
    await turnsUntil(() => claims === 1);
    for (let second = 1; second < STORE_REFUSED_RETRY_MS / 1000; second++) {
      h.worker.notify(); // an event accepted meanwhile
      h.time.advance(1_000);
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
    assert.equal(claims, 1, "each refused write held the event loop for the busy timeout");
    locked = false;
    h.time.advance(1_000);
    await h.worker.idle();
    assert.ok(claims >= 2, "tried again once the rest is over");
    assert.equal((await h.store.getEvent(id))!.status, "delivered");
  });
});

Deno.test("a write the store refuses during stop() is written by the stop, and no timer outlives it", async () => {
  let release!: () => void;
  const deliver = () =>
    new Promise<DeliveryReceipt>((resolve) => (release = () => resolve(RECEIPT)));
  await withWorker({ deliver }, async (h) => {
    const id = await accept(h.store);
    h.worker.start();
    await turnsUntil(() => release !== undefined);
    failNext(h.store, "markDelivered", 1); // locked as the delivery ends during the stop
    const stopped = h.worker.stop({ deadlineMs: 60_000 });
    release();
    await stopped;
    assert.equal(
      (await h.store.getEvent(id))!.status,
      "delivered",
      "written once more by the stop",
    );
    assert.equal(h.time.pending(), 0, "no timer left");
  });
});

Deno.test("worker does not let an outcome the store keeps refusing hold up the others", async () => {
  await withWorker({ maxConcurrency: 2 }, async (h) => {
    const stuck = await accept(h.store);
    const other = await accept(h.store);
    const markDelivered = h.store.markDelivered;
    let otherFailures = 1;
    h.store.markDelivered = (eventId, nowMs) => {
      if (eventId === stuck || otherFailures-- > 0) {
        throw new StoreUnavailableError("State database error: database is locked");
      }
      return markDelivered(eventId, nowMs);
    };
    h.worker.start();
    await turnsUntil(() => h.jobs.length === 2);
    await restsUntil(h, async () => (await h.store.getEvent(other))!.status === "delivered");
    assert.equal((await h.store.getEvent(stuck))!.status, "running");

    await h.worker.stop({ deadlineMs: 0 });
    const atStop = h.logs.find((l) => l.message.startsWith("worker stopped with outcomes"));
    assert.deepEqual(atStop?.props, { event_ids: [stuck] }, "what runs again is logged");
    assert.equal(h.jobs.length, 2, "each message was sent once");
  });
});

Deno.test("an answer the store refuses is delivered and kept, and the agent does not run again", async () => {
  let runs = 0;
  const runAgent = () => (runs++, Promise.resolve(answer("the answer")));
  let deliveries = 0;
  const deliver: WorkerDeps["deliver"] = () =>
    ++deliveries === 1
      ? Promise.reject(new TargetError("502 from Telegram"))
      : Promise.resolve(RECEIPT);
  await withWorker({ runAgent, deliver }, async (h) => {
    const id = await accept(h.store);
    failNext(h.store, "saveResponse", 1); // locked while the answer is saved
    h.worker.start();
    await turnsUntil(() => deliveries === 1);
    await restsUntil(h, async () => (await h.store.getEvent(id))!.status === "queued");
    const retried = (await h.store.getEvent(id))!;
    assert.equal(retried.response, "the answer", "written with the retry");
    assert.equal((await h.store.attempts(id))[0].step, "delivery", "the agent step did not fail");
    await runUntilSettled(h);
    assert.equal((await h.store.getEvent(id))!.status, "delivered");
    assert.equal(runs, 1, "the LLM was called once");
    assert.equal(deliveries, 2);
  });
});

Deno.test("worker keeps the parts already sent when the store fails between parts", async () => {
  const resumedAfter: (number | undefined)[] = [];
  const deliver: WorkerDeps["deliver"] = async (job, onPartSent) => {
    resumedAfter.push(job.partsAlreadySent);
    if (resumedAfter.length > 1) return RECEIPT;
    await onPartSent(1, 2, SENT);
    throw new TargetError("502 from Telegram on part 2");
  };
  await withWorker({ deliver }, async (h) => {
    const id = await accept(h.store);
    failNext(h.store, "savePartsSent", 1); // part 1 went out; recording it fails once
    failNext(h.store, "markRetry", 1);
    h.worker.start();
    await turnsUntil(() => h.logs.some((l) => l.message.startsWith("outcome held")));
    await restsUntil(h, async () => (await h.store.getEvent(id))!.status !== "running");
    assert.match((await h.store.attempts(id))[0].error!, /part 2/);
    await runUntilSettled(h);
    assert.deepEqual(resumedAfter, [0, 1], "the retry resumes after part 1");
    assert.equal((await h.store.getEvent(id))!.status, "delivered");
  });
});

Deno.test("worker.start() resumes events a previous run left running", async () => {
  await withWorker({}, async (h) => {
    const id = await accept(h.store);
    await h.store.claimDue(T0, 1); // a previous gateway claimed it, then crashed
    h.worker.start();
    await h.worker.idle();
    assert.equal((await h.store.getEvent(id))!.status, "delivered");
    assert.equal(h.logs[0].message, "resumed interrupted events");
  });
});

Deno.test("an event interrupted by a crash on every attempt ends failed, not run again", async () => {
  let runs = 0;
  const runAgent = () => (runs++, Promise.resolve(answer("never")));
  await withWorker({ runAgent, retry: { maxAttempts: 3 } }, async (h) => {
    const id = await accept(h.store);
    for (let crash = 0; crash < 3; crash++) {
      await h.store.claimDue(T0, 1); // a gateway claims it and dies during the run
      await h.store.recoverInterrupted(T0);
    }
    h.worker.start();
    await h.worker.idle();
    await new Promise((resolve) => setTimeout(resolve, 0));
    const stored = (await h.store.getEvent(id))!;
    assert.equal(stored.status, "failed");
    assert.match(stored.lastError ?? "", /its 3 attempts are used up, the last one interrupted/);
    assert.equal(runs, 0);
  });
});

Deno.test("worker delivers a replayed direct-mode event without running the agent", async () => {
  await withWorker({}, async (h) => {
    const direct = event({ mode: "direct", prompt: "Deploy finished" });
    const id = await h.store.recordDirect(direct, { delivered: false, error: "502", partsSent: 0 });
    h.worker.start();
    await h.worker.idle();
    assert.equal(h.jobs.length, 0, "failed direct events stay failed until replayed");
    await h.store.replay(id, h.time.now());
    h.time.advance(999);
    assert.equal((await h.store.getEvent(id))!.status, "queued");
    h.time.advance(1); // the poll picks up a replay made by another process
    await turnsUntil(() => h.jobs.length > 0);
    assert.equal(h.prompts.length, 0);
    assert.equal(h.jobs[0]?.text, "Deploy finished");
    await h.worker.idle();
    assert.equal((await h.store.getEvent(id))!.status, "delivered");
  });
});

Deno.test("worker.notify() starts an event accepted while the worker was idle", async () => {
  await withWorker({ pollIntervalMs: 60_000 }, async (h) => {
    h.worker.start();
    await h.worker.idle();
    const id = await accept(h.store, { receivedAtMs: h.time.now() });
    h.worker.notify();
    // Claimed at once, not at the poll a minute away (the test's clock does not move).
    await turnsUntil(async () => (await h.store.getEvent(id))!.status !== "queued");
    await h.worker.idle();
    assert.equal((await h.store.getEvent(id))!.status, "delivered");
  });
});

Deno.test("a saved silent answer is still silence: an event whose outcome was lost delivers nothing on its next attempt", async () => {
  let deliveries = 0;
  const deliver = () => (deliveries++, Promise.resolve(RECEIPT));
  await withWorker({ deliver }, async (h) => {
    const id = await accept(h.store);
    // An earlier attempt saved the agent's silence, then its gateway died before the outcome.
    await h.store.claimDue(h.time.now(), 1);
    await h.store.saveResponse(id, " [SILENT]\n");
    await h.store.recoverInterrupted(h.time.now());
    h.worker.start();
    await runUntilSettled(h);
    assert.equal(h.prompts.length, 0, "the agent is not asked again");
    assert.equal(deliveries, 0, "the marker is not sent as text");
    assert.equal((await h.store.getEvent(id))!.status, "delivered");
  });
});
