/**
 * The subscriptions pages' routes, behind the session check, each POST behind the CSRF check
 * (docs/dashboard.md#subscriptions): `GET /subscriptions` (`?new`: the New form),
 * `GET /subscriptions/<name>`; `POST /subscriptions` (create), `POST /subscriptions/<name>`
 * (edit), and `.../test`, `.../enable`, `.../disable`, `.../remove`. A refused form is shown
 * again as it was typed, with the CLI's message and 400, 404 or 409.
 *
 * @module
 */
import type { Context, Hono } from "hono";
import { ConfigError, ConflictError, NotFoundError, UsageError } from "../../lib/errors.ts";
import type { DashboardEnv } from "./_auth.ts";
import { MessagePage, sendPage } from "./_layout.tsx";
import { routeForm } from "./_subscriptions_form.tsx";
import {
  NewSubscriptionPage,
  type Notice,
  SubscriptionPage,
  SubscriptionsPage,
} from "./_subscriptions_page.tsx";
import {
  FORM_OPTIONS,
  removeSubscription,
  type Saved,
  saveSubscription,
  setDisabled,
  type SubscriptionForm,
} from "./_subscriptions_save.ts";
import { runTest } from "./_subscriptions_test.ts";
import { routesView, senderUrl } from "./_subscriptions_view.ts";
import type { AppParts } from "./mod.ts";

/**
 * Adds the subscriptions routes to the dashboard app.
 * @param app the app, its session check and CSRF check already in front of these paths
 * @param parts what the routes read and write (the store, the configuration, the clock)
 */
export function subscriptionRoutes(app: Hono<DashboardEnv>, parts: AppParts): void {
  // The New form is `?new`, not a path: `new` is a name a subscription may have.
  app.get("/subscriptions", (c) => {
    if (c.req.query("new") !== undefined) return newPage(c, { form: blankForm() });
    return listPage(c, parts);
  });
  app.get("/subscriptions/:name", (c) => routePage(c, parts, c.req.param("name")));
  app.post("/subscriptions", (c) => save(c, parts, { creating: true }));
  app.post("/subscriptions/:name", (c) => save(c, parts, { creating: false }));
  app.post("/subscriptions/:name/test", async (c) => {
    const name = c.req.param("name");
    const form = await postedForm(c);
    const notice = await runTest(name, { parts, form }).catch((error): Notice => {
      return { ok: false, text: refusal(error) };
    });
    return routePage(c, parts, name, notice);
  });
  app.post("/subscriptions/:name/disable", (c) => toggle(c, parts, { disabled: true }));
  app.post("/subscriptions/:name/enable", (c) => toggle(c, parts, { disabled: false }));
  app.post("/subscriptions/:name/remove", async (c) => {
    const name = c.req.param("name");
    try {
      await removeSubscription(name, parts.config);
      return listPage(c, parts, { ok: true, text: `Removed subscription "${name}"` });
    } catch (error) {
      return routePage(c, parts, name, { ok: false, text: refusal(error) });
    }
  });
}

/**
 * The New form's or a subscription's Save: the route's page saying what was stored, or the form
 * again as it was typed, with why it was refused.
 */
async function save(c: Context<DashboardEnv>, parts: AppParts, options: { creating: boolean }) {
  const { creating } = options;
  const form = await postedForm(c);
  const name = creating ? (form.name ?? "").trim() : c.req.param("name")!;
  const nowIso = new Date(parts.now()).toISOString();
  try {
    const saved = await saveSubscription(name, { config: parts.config, nowIso, form, creating });
    return routePage(c, parts, name, await savedNotice(parts, name, saved));
  } catch (error) {
    const notice = { ok: false, text: refusal(error) };
    if (creating) return newPage(c, { form, notice }, statusOf(error));
    return routePage(c, parts, name, notice, { form, status: statusOf(error) });
  }
}

/** Disable or Enable: the route's page, saying what changed. */
async function toggle(c: Context<DashboardEnv>, parts: AppParts, options: { disabled: boolean }) {
  const { disabled } = options;
  const name = c.req.param("name")!;
  const nowIso = new Date(parts.now()).toISOString();
  try {
    const changed = await setDisabled(name, { disabled, config: parts.config, nowIso });
    const text = !changed
      ? `"${name}" is already ${disabled ? "disabled" : "enabled"}.`
      : disabled
      ? `Disabled "${name}": the gateway answers its requests 404, as an unknown name's. ` +
        "Its secret is kept."
      : `Enabled "${name}": the gateway serves its requests again, with its secret.`;
    return routePage(c, parts, name, { ok: true, text });
  } catch (error) {
    return routePage(c, parts, name, { ok: false, text: refusal(error) });
  }
}

/** `GET /subscriptions`, or the list after a removal. */
async function listPage(c: Context<DashboardEnv>, parts: AppParts, notice?: Notice) {
  const view = await routesView(parts.config, { store: parts.store, nowMs: parts.now() });
  const csrf = c.get("session")!.csrf;
  return sendPage(c, <SubscriptionsPage csrf={csrf} view={view} notice={notice} />);
}

/** The New form, blank or as it was posted. */
function newPage(
  c: Context<DashboardEnv>,
  props: { form: SubscriptionForm; notice?: Notice },
  status: 200 | 400 | 404 | 409 = 200,
) {
  const csrf = c.get("session")!.csrf;
  return sendPage(c, <NewSubscriptionPage csrf={csrf} {...props} />, status);
}

/**
 * A route's page, read again (an action may have just changed it), with the notice of what
 * was done; its form filled from the record, or as it was posted when it was refused.
 */
async function routePage(
  c: Context<DashboardEnv>,
  parts: AppParts,
  name: string,
  notice?: Notice,
  posted?: { form: SubscriptionForm; status: 200 | 400 | 404 | 409 },
) {
  const view = await routesView(parts.config, { store: parts.store, nowMs: parts.now() });
  const row = view.routes.find((r) => r.route.name === name);
  if (!row) {
    const problem = view.unusable.get(name) ?? view.fileError;
    const page = (
      <MessagePage
        title="No such subscription"
        message={notice?.text ?? problem ?? `No subscription named "${name}".`}
      />
    );
    return sendPage(c, page, notice?.ok === true ? 200 : 404);
  }
  const form = posted?.form ?? routeForm(row.route);
  const page = (
    <SubscriptionPage csrf={c.get("session")!.csrf} row={row} form={form} notice={notice} />
  );
  return sendPage(c, page, posted?.status ?? (notice?.ok === false ? 400 : 200));
}

/**
 * What a save says, as `subscribe` prints it: the URL, the secret shown whole only when it was
 * just made (else its last 4 characters, on the page), and the warnings.
 */
async function savedNotice(parts: AppParts, name: string, saved: Saved): Promise<Notice> {
  const { record } = saved;
  const url = await senderUrl(parts.config, name);
  const lines = [
    `${saved.created ? "Created" : "Updated"} subscription "${name}"`,
    `  URL:     ${url}`,
  ];
  if (record.auth === "none") {
    lines.push(
      "  Secret:  none asked for (auth none: unsigned requests, on a loopback address only)",
    );
  } else if (saved.showSecret) {
    lines.push(
      `  Secret:  ${record.secret}`,
      "",
      "The secret is shown this once: give it to the sender now.",
    );
  } else if (saved.created) {
    lines.push(`  Secret:  the one typed, ending in …${record.secret?.slice(-4)}`);
  }
  return { ok: true, text: lines.join("\n"), lines: saved.warnings.map((w) => `Warning: ${w}`) };
}

/** The posted form's fields, each option present (blank when not sent). */
async function postedForm(c: Context<DashboardEnv>): Promise<SubscriptionForm> {
  const body = await c.req.parseBody();
  const form: SubscriptionForm = {};
  for (const [key, value] of Object.entries(body)) {
    if (typeof value === "string" && key !== "_csrf") form[key] = value;
  }
  return { ...blankForm(), ...form };
}

/** The New form's fields. */
function blankForm(): SubscriptionForm {
  return { ...Object.fromEntries(FORM_OPTIONS.map((name) => [name, ""])), deliver: "log" };
}

/** The message of an error a form may cause; anything else is thrown on to `app.onError`. */
function refusal(error: unknown): string {
  if (
    error instanceof UsageError || error instanceof ConfigError ||
    error instanceof ConflictError || error instanceof NotFoundError
  ) return error.message;
  throw error;
}

/** The status of a refused form: 404 for a name gone, 409 for one taken, else 400. */
function statusOf(error: unknown): 400 | 404 | 409 {
  if (error instanceof NotFoundError) return 404;
  if (error instanceof ConflictError) return 409;
  return 400;
}
