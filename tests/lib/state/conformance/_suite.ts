/**
 * The shape of the conformance suite: a case is one promise of the interface, run on a fresh
 * place of the backend under test; a backend's run registers every case as a `Deno.test`.
 *
 * @module
 */
import type { StateStore, StateStoreOptions } from "../../../../lib/state/mod.ts";

/** One place that holds a store's data: every `open` of it opens the same data, as a restart does. */
export interface StorePlace {
  /**
   * Opens a store on this place's data.
   * @param options what every backend takes (a backend's own options are its factory's choice)
   */
  open(options?: StateStoreOptions): Promise<StateStore>;
  /** Deletes the data, once every store opened on it is closed. */
  remove(): Promise<void>;
}

/** Makes a fresh, empty place for a store: a temporary file, a new database. */
export type StoreFactory = () => Promise<StorePlace>;

/** A case run on a store opened on a fresh place, then closed. */
interface StoreCase {
  name: string;
  /** What to open the store with; a function when they hold state (an id generator). */
  options?: StateStoreOptions | (() => StateStoreOptions);
  run(store: StateStore, place: StorePlace): Promise<void> | void;
}

/** A case that opens (and closes) its stores itself: what survives a close and a reopen. */
interface PlaceCase {
  name: string;
  onPlace(place: StorePlace): Promise<void>;
}

/** One promise of the interface, as a test. */
export type Case = StoreCase | PlaceCase;

/**
 * Registers cases as tests named `<backend>: <name>`, each on a fresh place, removed after.
 * @param backend the backend's name
 * @param factory makes the places
 * @param cases the cases
 */
export function registerCases(backend: string, factory: StoreFactory, cases: Case[]): void {
  for (const testCase of cases) {
    Deno.test(`${backend}: ${testCase.name}`, async () => {
      const place = await factory();
      try {
        await ("onPlace" in testCase ? testCase.onPlace(place) : runOnStore(testCase, place));
      } finally {
        await place.remove();
      }
    });
  }
}

async function runOnStore(testCase: StoreCase, place: StorePlace): Promise<void> {
  const { options = {} } = testCase;
  const store = await place.open(typeof options === "function" ? options() : options);
  try {
    await testCase.run(store, place);
  } finally {
    await store.close();
  }
}
