/**
 * The `log` target: the message goes to the gateway log (and, through the worker, the event
 * record). Needs nothing, never fails, has no length limit.
 *
 * @module
 */

import type { Target } from "./_target.ts";

/** Which event a logged message answers. */
export interface LogDestination {
  /** Subscription name. */
  subscription: string;
  /** Event label (`issues.opened`). */
  event: string;
  /** The gateway's id of the event, so that its lines can be found together. */
  eventId: string;
}

/** Writes `delivered to log` with the subscription, event label, event id and text to `ctx.log`. */
export const log: Target<LogDestination> = {
  name: "log",
  needs: "-",
  destination: "the gateway log and the event record",
  resolve(job) {
    return {
      label: "gateway log",
      destination: { subscription: job.subscription, event: job.eventLabel, eventId: job.eventId },
    };
  },
  send({ subscription, event, eventId }, { text }, ctx) {
    ctx.log("delivered to log", { subscription, event, event_id: eventId, text });
    return Promise.resolve({});
  },
};
