/**
 * The frame of every dashboard page: the head that loads the embedded style sheet and script,
 * the top bar with the log-out form, and the pages that stand alone (how to log in, a refusal,
 * an error).
 *
 * @module
 */
import type { Child } from "hono/jsx";
import type { Context } from "hono";

/** What the frame of a page needs. */
export interface LayoutProps {
  /** The page's title, before ` · agent dashboard`. */
  title: string;
  /** Which page it is (`data-page`, read by the script). */
  page: string;
  /** The session's CSRF token, for the log-out form; absent on pages shown without a session. */
  csrf?: string;
  /** The live updates' URL (`data-stream`), when the page follows them. */
  stream?: string;
  /** The status filter of the events page (`data-status`). */
  status?: string;
  /** The event shown (`data-event-id`). */
  eventId?: string;
  children?: Child;
}

/** A whole page, its top bar offering the overview and events pages and, in a session, a log-out button. */
export function Layout(props: LayoutProps) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{props.title} · agent dashboard</title>
        <link rel="stylesheet" href="/assets/app.css" />
        <script src="/assets/app.js" defer></script>
      </head>
      <body
        data-page={props.page}
        data-stream={props.stream}
        data-status={props.status}
        data-event-id={props.eventId}
      >
        <header class="top">
          <span class="brand">agent</span>
          <nav>
            {props.csrf !== undefined && <a href="/overview">Overview</a>}{" "}
            {props.csrf !== undefined && <a href="/events">Events</a>}{" "}
            {props.csrf !== undefined && <a href="/subscriptions">Subscriptions</a>}{" "}
            {props.csrf !== undefined && <a href="/playground">Playground</a>}
          </nav>
          {props.csrf !== undefined && (
            <form method="post" action="/logout">
              <input type="hidden" name="_csrf" value={props.csrf} />
              <button type="submit">Log out</button>
            </form>
          )}
        </header>
        <main>{props.children}</main>
      </body>
    </html>
  );
}

/**
 * Answers with a page: the doctype, then the page.
 * @param c the request's context
 * @param page the page, from {@link Layout}
 * @param status the HTTP status @default {200}
 */
export function sendPage(
  c: Context,
  page: ReturnType<typeof Layout>,
  status: 200 | 400 | 401 | 403 | 404 | 409 | 500 | 503 = 200,
): Response | Promise<Response> {
  return c.html(`<!DOCTYPE html>${page}`, status);
}

/**
 * The page of a request the dashboard will not serve, and what to do about it.
 * @param props `title` and `message`; `hint`: a command to run, shown as code
 */
export function MessagePage(props: { title: string; message: string; hint?: string }) {
  return (
    <Layout title={props.title} page="message">
      <div class="center">
        <h1>{props.title}</h1>
        <p>{props.message}</p>
        {props.hint && (
          <p>
            <code>{props.hint}</code>
          </p>
        )}
      </div>
    </Layout>
  );
}

/** What a page without a session says: how to log in. */
export const LOGIN_HINT = {
  title: "Log in to the dashboard",
  message: "The dashboard needs a session, even on this machine. On the machine the gateway " +
    "runs on, run the command below: it prints a link that logs you in (it works once, for " +
    "10 minutes).",
  hint: "agent dashboard",
};
