/** URLs in messages and logs: credentials cut out. Pure, so the client and the broker share it. */

/** `url` without its user-info (up to its last `@`) and with any `password=` parameter masked. */
export function redactUrl(url: string): string {
  return url.replace(/\/\/[^/?#]*@/, '//***@').replace(/([?&]password=)[^&#]*/gi, '$1***');
}
