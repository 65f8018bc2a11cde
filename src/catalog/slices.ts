/**
 * Writes of many rows in slices: one statement per slice, and the event loop let through between them. SQLite runs a
 * statement synchronously (better-sqlite3), so a write of a minute's history in one go would hold every socket of the
 * broker for its whole length; in slices a stall lasts one slice (about a millisecond).
 */
import { setImmediate as nextTurn } from 'node:timers/promises';

/** Rows per statement of a sliced write. */
export const ROWS_PER_SLICE = 100;

/**
 * Calls `write` with `rows` in slices of {@link ROWS_PER_SLICE}, in order, one at a time, letting the event loop turn
 * between two slices.
 * @throws what `write` throws (the slices before it are written)
 */
export async function inSlices<T>(rows: readonly T[], write: (slice: readonly T[]) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < rows.length; i += ROWS_PER_SLICE) {
    if (i > 0) await nextTurn();
    await write(rows.slice(i, i + ROWS_PER_SLICE));
  }
}
