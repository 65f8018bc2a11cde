import { OnelogError } from '../../src/protocol/errors.js';

/** The error code `fn` throws, or 'no error'. Rethrows anything that is not an OnelogError. */
export function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    if (e instanceof OnelogError) return e.code;
    throw e;
  }
  return 'no error';
}

/** The error code `p` rejects with, or 'no error'. Rethrows anything that is not an OnelogError. */
export async function asyncCodeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    if (e instanceof OnelogError) return e.code;
    throw e;
  }
  return 'no error';
}

/** The OnelogError `fn` throws; fails if it throws none. Rethrows anything that is not an OnelogError. */
export function errorOf(fn: () => unknown): OnelogError {
  try {
    fn();
  } catch (e) {
    if (e instanceof OnelogError) return e;
    throw e;
  }
  throw new Error('expected an OnelogError, got none');
}

/** The OnelogError `p` rejects with; fails if it rejects with none. Rethrows anything that is not an OnelogError. */
export async function asyncErrorOf(p: Promise<unknown>): Promise<OnelogError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof OnelogError) return e;
    throw e;
  }
  throw new Error('expected an OnelogError, got none');
}
