/**
 * The runs a share-partition's state is stored as (coordinator/share-partition.ts): disjoint offset ranges
 * `[first, last]`, each one offset-store entry keyed by `first`, whose records all have the same stored fields. Kept
 * in memory beside the window so a change rewrites only the runs it touches. Pure: no I/O.
 */
export class StoredRuns {
  /** The runs' first offsets, ascending. */
  private readonly firsts: number[] = [];
  /** first -> last */
  private readonly lasts = new Map<number, number>();

  /** @param runs runs as stored, disjoint */
  constructor(runs: ReadonlyArray<readonly [number, number]> = []) {
    for (const [first, last] of [...runs].sort((a, b) => a[0] - b[0])) this.add(first, last);
  }

  /** The run holding `offset`, as `[first, last]`; undefined when none does. */
  at(offset: number): [number, number] | undefined {
    const i = this.lastFirstAtOrBelow(offset);
    if (i < 0) return undefined;
    const first = this.firsts[i]!;
    const last = this.lasts.get(first)!;
    return last >= offset ? [first, last] : undefined;
  }

  /** Adds a run that overlaps none. */
  add(first: number, last: number): void {
    this.firsts.splice(this.lastFirstAtOrBelow(first) + 1, 0, first);
    this.lasts.set(first, last);
  }

  /** Removes the runs that start within `[from, to]`. @returns their first offsets */
  takeWithin(from: number, to: number): number[] {
    let i = this.lastFirstAtOrBelow(from - 1) + 1;
    const start = i;
    while (i < this.firsts.length && this.firsts[i]! <= to) this.lasts.delete(this.firsts[i++]!);
    return this.firsts.splice(start, i - start);
  }

  /** Removes the runs that end below `offset`. @returns their first offsets */
  takeBelow(offset: number): number[] {
    let n = 0;
    while (n < this.firsts.length && this.lasts.get(this.firsts[n]!)! < offset) this.lasts.delete(this.firsts[n++]!);
    return this.firsts.splice(0, n);
  }

  /** How many runs there are. */
  get size(): number {
    return this.firsts.length;
  }

  /** The index of the greatest first offset <= `offset`, -1 when none is. */
  private lastFirstAtOrBelow(offset: number): number {
    let lo = 0;
    let hi = this.firsts.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (this.firsts[mid]! <= offset) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found;
  }
}
