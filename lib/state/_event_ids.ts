/**
 * Event ids: `evt_` and 16 base-36 characters that sort in creation order, made by every
 * backend alike.
 *
 * @module
 */
const RANDOM_SPACE = 36 ** 7;

/**
 * Makes a generator of event ids: `evt_` + 9 base-36 characters of milliseconds + 7 of
 * randomness (20 characters). Ids made by one generator sort in creation order: within one
 * millisecond the random part is incremented instead of redrawn (as ULIDs do).
 * @param now clock in milliseconds since the epoch
 * @param random a value in [0, 1)
 * @returns a function that returns a fresh id on each call
 * @example A backend's default ids
 * ```ts
 * const newId = createIdGenerator(Date.now, cryptoRandom);
 * newId(); // "evt_0mh2k3x9a1b2c3d4"
 * ```
 */
export function createIdGenerator(now: () => number, random: () => number): () => string {
  let lastMs = -1;
  let lastRandom = 0;
  return () => {
    const ms = Math.max(now(), lastMs);
    if (ms === lastMs && lastRandom + 1 < RANDOM_SPACE) lastRandom += 1;
    else lastRandom = Math.floor(random() * (RANDOM_SPACE / 2));
    lastMs = ms;
    return "evt_" + ms.toString(36).padStart(9, "0") + lastRandom.toString(36).padStart(7, "0");
  };
}

/** A random value in [0, 1) from the platform's cryptographic generator. */
export function cryptoRandom(): number {
  return crypto.getRandomValues(new Uint32Array(1))[0] / 2 ** 32;
}
