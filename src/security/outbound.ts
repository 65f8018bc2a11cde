/**
 * Where the broker may send HTTP requests of its own (docs/security.md): the webhooks of push subscriptions
 * (`pushEndpoint`) and alert sinks. Always absolute http:// or https:// URLs. With `denyPrivateAddresses`
 * (`serve --webhook-deny-private`), also never to a loopback, private, link-local, shared, multicast or
 * unspecified address, so that a subscription cannot be used to reach internal services (SSRF): a URL naming such
 * an address is refused when given, and a host name is checked on every connection, after DNS resolution (so a
 * name that later resolves to an internal address is refused too).
 */
import dns from 'node:dns';
import net from 'node:net';
import { Agent } from 'undici';
import type { Dispatcher } from 'undici';
import { OnelogError } from '../protocol/errors.js';

const PRIVATE = new net.BlockList();
for (const [prefix, bits] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12], ['192.0.0.0', 24],
  ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) PRIVATE.addSubnet(prefix, bits, 'ipv4');
for (const [prefix, bits] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8]] as const) PRIVATE.addSubnet(prefix, bits, 'ipv6');

/** Whether `address` (an IP) is loopback, private, link-local, shared, multicast or unspecified (IPv4 in IPv6 too). */
export function isPrivateAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped !== undefined) return PRIVATE.check(mapped, 'ipv4');
  const family = net.isIP(address);
  return family !== 0 && PRIVATE.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

export class OutboundPolicy {
  /** The connections of webhook POSTs: one that checks every resolved address, or the default when private addresses are allowed. */
  readonly dispatcher: Dispatcher | undefined;

  constructor(readonly denyPrivateAddresses = false) {
    this.dispatcher = denyPrivateAddresses ? new Agent({ connect: { lookup: publicOnlyLookup } }) : undefined;
  }

  /**
   * @param field how the error names the URL (`pushEndpoint`, `url`)
   * @throws OnelogError `INVALID_REQUEST` unless `url` is an absolute http(s) URL; `FORBIDDEN` (`reason: private-address`)
   *   for a private address or `localhost` when those are refused
   */
  check(url: unknown, field: string): void {
    let parsed: URL | undefined;
    try {
      parsed = new URL(String(url));
    } catch {
      parsed = undefined;
    }
    if (typeof url !== 'string' || !parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) {
      throw new OnelogError('INVALID_REQUEST', `${field} must be an absolute http:// or https:// URL, got ${JSON.stringify(url)}`, { [field]: url });
    }
    // `localhost.` is `localhost`: a trailing dot names the same host.
    const host = parsed.hostname.replace(/^\[|\]$/g, '').replace(/\.+$/, '');
    if (this.denyPrivateAddresses && (isPrivateAddress(host) || host === 'localhost' || host.endsWith('.localhost'))) {
      throw refused(field, url, host);
    }
  }
}

function refused(field: string, url: string, address: string): OnelogError {
  return new OnelogError('FORBIDDEN', `${field} ${url} is refused: ${address} is a loopback or private address, and this broker ` +
    'sends webhooks to public addresses only (serve --webhook-deny-private)', { [field]: url, reason: 'private-address' });
}

/** dns.lookup, failing for a host that resolves to a private address. */
function publicOnlyLookup(hostname: string, options: dns.LookupOptions, callback: (err: Error | null, address: string | dns.LookupAddress[], family?: number) => void): void {
  dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, []);
    const blocked = addresses.find((a) => isPrivateAddress(a.address));
    if (blocked) return callback(refused('webhook', hostname, blocked.address), []);
    if (options.all) return callback(null, addresses);
    callback(null, addresses[0]!.address, addresses[0]!.family);
  });
}
