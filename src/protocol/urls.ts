/** URLs in messages and logs: credentials cut out. Pure, so the client and the broker share it. */

/**
 * `text` (a URL, or a message that names URLs anywhere in it: a library's error quoting the URL it was given) with
 * every URL's user-info (`//user:password@`, up to the last `@` before the host ends) cut to `//***@` and every
 * `password=` parameter masked.
 */
export function redactUrl(text: string): string {
  return text.replace(/\/\/[^/?#\s]*@/g, '//***@').replace(/([?&]password=)[^&#\s]*/gi, '$1***');
}
