/**
 * The subscriptions pages (docs/dashboard.md#subscriptions): every route with its URL, events,
 * target, mode, rate limit, state, secret (its last 4 characters) and its events over 24 hours;
 * one route's page, with its form, its Test form and its Enable, Disable and Remove buttons;
 * and the page after a save, which shows a new secret once.
 *
 * @module
 */
import type { Child } from "hono/jsx";
import { Layout } from "./_layout.tsx";
import { type FormProps, SubscriptionFormFields } from "./_subscriptions_form.tsx";
import type { RoutesView, RouteView } from "./_subscriptions_view.ts";

/** A message above a page: what an action did, or why it did not. */
export interface Notice {
  ok: boolean;
  text: string;
  /** Lines below it: warnings, hints. */
  lines?: string[];
  /** A link to follow, e.g. the test event's page. */
  link?: { href: string; text: string };
}

/** The list of every route. */
export function SubscriptionsPage(props: { csrf: string; view: RoutesView; notice?: Notice }) {
  const { view } = props;
  return (
    <Layout title="Subscriptions" page="subscriptions" csrf={props.csrf}>
      <h1>Subscriptions</h1>
      <NoticeBox notice={props.notice} />
      {view.fileError && <div class="notice bad">{view.fileError}</div>}
      <p class="actions">
        <a class="button" href="/subscriptions?new" id="new-subscription">New subscription</a>
      </p>
      <table id="subscriptions">
        <thead>
          <tr>
            <th>Name</th>
            <th>URL</th>
            <th>Events</th>
            <th>Target</th>
            <th>Mode</th>
            <th>Rate limit</th>
            <th>State</th>
            <th>Secret</th>
            <th title="accepted / delivered / failed">24 h</th>
          </tr>
        </thead>
        <tbody>
          {view.routes.length === 0 && (
            <tr class="empty">
              <td colspan={9}>No subscriptions yet: create one above.</td>
            </tr>
          )}
          {view.routes.map((row) => <RouteRow key={row.route.name} row={row} />)}
        </tbody>
      </table>
      <Unusable view={view} />
    </Layout>
  );
}

/** One route's row. */
function RouteRow(props: { row: RouteView }) {
  const { row } = props;
  const { route, counts } = row;
  const events = `/events?subscription=${encodeURIComponent(route.name)}`;
  return (
    <tr data-name={route.name}>
      <td>
        <a href={`/subscriptions/${route.name}`}>{route.name}</a>
        {route.origin === "static" && <span class="muted">(config.yaml)</span>}
        {route.description && <div class="muted">{route.description}</div>}
      </td>
      <td class="mono">{row.url}</td>
      <td class="mono">{row.events}</td>
      <td>{row.target}</td>
      <td>{row.mode}</td>
      <td>{row.rateLimit}</td>
      <td class={row.served ? "state" : "state error-text"}>{row.state}</td>
      <td class="mono secret">{row.secret}</td>
      <td class="counts">
        <a href={events} title="accepted / delivered / failed in the last 24 hours">
          <span class="accepted">{counts.accepted}</span> /{" "}
          <span class="status-delivered delivered">{counts.delivered}</span> /{" "}
          <span class="status-failed failed">{counts.failed}</span>
        </a>
      </td>
    </tr>
  );
}

/** The records the gateway cannot serve, and those a static route hides. */
function Unusable(props: { view: RoutesView }) {
  const { unusable, hidden } = props.view;
  if (unusable.size === 0 && hidden.length === 0) return null;
  return (
    <section class="block" id="unusable">
      <h2>Not served</h2>
      <ul>
        {[...unusable].map(([name, problem]) => <Item key={name} text={problem} bad />)}
        {hidden.map((name) => (
          <Item
            key={name}
            text={`Subscription "${name}" is hidden by the static route of its name in config.yaml.`}
          />
        ))}
      </ul>
    </section>
  );
}

/** The New form's page. */
export function NewSubscriptionPage(props: FormProps & { notice?: Notice }) {
  return (
    <Layout title="New subscription" page="subscription-new" csrf={props.csrf}>
      <h1>New subscription</h1>
      <p class="muted">
        As{" "}
        <code>agent webhook subscribe &lt;name&gt;</code>: each field is the flag named beside it.
      </p>
      <NoticeBox notice={props.notice} />
      <SubscriptionFormFields {...props} />
    </Layout>
  );
}

/** One route's page: what it is, its form (a subscription's), Test, and the buttons. */
export function SubscriptionPage(
  props: { csrf: string; row: RouteView; form: FormProps["form"]; notice?: Notice },
) {
  const { row, csrf } = props;
  const { route } = row;
  const dynamic = route.origin === "dynamic";
  return (
    <Layout title={route.name} page="subscription" csrf={csrf}>
      <h1>
        {route.name} <span class={row.served ? "muted" : "error-text"}>{row.state}</span>
      </h1>
      <NoticeBox notice={props.notice} />
      <dl class="facts" id="facts">
        <dt>URL</dt>
        <dd class="mono" id="url">{row.url}</dd>
        <dt>Secret</dt>
        <dd class="mono" id="secret">{row.secret}</dd>
        <dt>Last 24 hours</dt>
        <dd id="counts">
          {row.counts.accepted} accepted, {row.counts.delivered} delivered, {row.counts.failed}{" "}
          failed · <a href={`/events?subscription=${encodeURIComponent(route.name)}`}>its events</a>
        </dd>
      </dl>
      <TestForm csrf={csrf} name={route.name} />
      {dynamic
        ? <DynamicControls csrf={csrf} row={row} form={props.form} />
        : <StaticFacts row={row} />}
    </Layout>
  );
}

/** A subscription's form and its Enable or Disable and Remove buttons. */
function DynamicControls(props: { csrf: string; row: RouteView; form: FormProps["form"] }) {
  const { csrf, row } = props;
  const name = row.route.name;
  const toggle = row.route.disabled ? "enable" : "disable";
  return (
    <>
      <h2>Edit</h2>
      <SubscriptionFormFields csrf={csrf} name={name} form={props.form} secretHint={row.secret} />
      <div class="actions">
        <PostButton csrf={csrf} action={`/subscriptions/${name}/${toggle}`} id="toggle">
          {row.route.disabled ? "Enable" : "Disable"}
        </PostButton>
        <PostButton csrf={csrf} action={`/subscriptions/${name}/remove`} id="remove">
          Remove {name}
        </PostButton>
      </div>
    </>
  );
}

/** A static route: read only, shown as `webhook list` shows it. */
function StaticFacts(props: { row: RouteView }) {
  const { row } = props;
  return (
    <section class="block">
      <h2>Defined in config.yaml</h2>
      <p class="muted">Static routes are changed in config.yaml, not here.</p>
      <dl class="facts">
        <dt>Events</dt>
        <dd class="mono">{row.events}</dd>
        <dt>Target</dt>
        <dd>{row.target}</dd>
        <dt>Mode</dt>
        <dd>{row.mode}</dd>
        <dt>Rate limit</dt>
        <dd>{row.rateLimit}</dd>
        <dt>Prompt</dt>
        <dd>
          <pre>{row.route.prompt || "(none: the whole JSON payload is sent)"}</pre>
        </dd>
      </dl>
    </section>
  );
}

/** The Test form: an event type and a payload, as `agent webhook test` takes them. */
function TestForm(props: { csrf: string; name: string }) {
  return (
    <form method="post" action={`/subscriptions/${props.name}/test`} class="block sub-test">
      <h2>Test</h2>
      <p class="muted">
        Sends a signed test event to this gateway, as <code>agent webhook test</code> does.
      </p>
      <input type="hidden" name="_csrf" value={props.csrf} />
      <label class="field">
        <span>
          Event type <code class="flag">--event</code>
        </span>
        <input name="event" value="test" />
      </label>
      <label class="field">
        <span>
          Payload <code class="flag">--payload</code>
        </span>
        <textarea name="payload" rows={3} spellcheck={false} placeholder='{"test": true}'>
        </textarea>
      </label>
      <button type="submit" id="send-test">Send test event</button>
    </form>
  );
}

/** A button that posts, with the session's CSRF token. */
function PostButton(props: { csrf: string; action: string; id: string; children?: Child }) {
  return (
    <form method="post" action={props.action}>
      <input type="hidden" name="_csrf" value={props.csrf} />
      <button type="submit" id={props.id}>{props.children}</button>
    </form>
  );
}

/** A notice, its lines and its link. */
export function NoticeBox(props: { notice?: Notice }) {
  const { notice } = props;
  if (!notice) return null;
  return (
    <div class={notice.ok ? "notice ok" : "notice bad"} role="status" id="notice">
      <pre class="notice-text">{notice.text}</pre>
      {notice.lines?.length
        ? <ul>{notice.lines.map((line, i) => <Item key={i} text={line} />)}</ul>
        : null}
      {notice.link && (
        <p>
          <a href={notice.link.href} id="notice-link">{notice.link.text}</a>
        </p>
      )}
    </div>
  );
}

/** One item of a list; `bad` marks a problem. */
function Item(props: { text: string; bad?: boolean }) {
  return <li class={props.bad ? "error-text" : undefined}>{props.text}</li>;
}
