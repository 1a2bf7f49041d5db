/**
 * The median the benchmarks report for their rounds.
 *
 * @module
 */

/**
 * The median of `values`: the middle value, or the mean of the two middle ones for an even
 * count. `values` is not changed.
 * @param values at least one number
 * @returns the median
 */
export function median(values: readonly number[]): number {
  const sorted = values.toSorted((x, y) => x - y);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}
