/**
 * JSON text written out by hand on the CLI's hot paths (a CSV row as a record value, a consumed record as an output
 * line): `JSON.stringify` of an object built per record costs several times as much as joining the parts, and the
 * text is the same.
 */

/** Characters a JSON string must escape (a string without them is quoted as it is). */
const NEEDS_ESCAPE = /["\\\u0000-\u001f\u2028\u2029\ud800-\udfff]/; // eslint-disable-line no-control-regex -- JSON escapes them

/** `s` as a JSON string, as `JSON.stringify(s)` writes it. */
export function jsonString(s: string): string {
  return NEEDS_ESCAPE.test(s) ? JSON.stringify(s) : `"${s}"`;
}
