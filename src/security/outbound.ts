/**
 * Where the broker may send HTTP requests of its own (docs/security.md): the webhooks of push subscriptions
 * (`pushEndpoint`) and alert sinks. Always absolute http:// or https:// URLs, and by default only to addresses
 * that are globally reachable (as IANA's special-purpose address registries, RFC 6890, mark them), so that a
 * subscription cannot be used to reach the broker's own machine or its network (server-side request forgery).
 * Refused: loopback, private, shared (CGNAT), link-local (cloud metadata services), unique-local, multicast,
 * unspecified, reserved, documentation and benchmarking ranges, IPv4 and IPv6; IPv6 forms that carry such an IPv4
 * address (IPv4-mapped `::ffff:0:0/96`, SIIT `::ffff:0:0:0/96`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`); IPv4-compatible
 * `::/96`, Teredo `2001::/32` and local-use NAT64 `64:ff9b:1::/48` whole; and every address of the machine's
 * own interfaces (`os.networkInterfaces()`, read on each check), also when embedded so. A URL naming such an
 * address, or `localhost`, is refused when given; a host name is checked when the POST connects: every address
 * it resolves to must pass (a name with one refused address among several is refused), and the socket's
 * remote address is checked again once connected, before the request is written. So a name that resolves to an
 * internal address later (DNS rebinding) is refused too. `serve --webhook-allow-private` turns all of this off.
 */
import dns from 'node:dns';
import net from 'node:net';
import os from 'node:os';
import { Agent, buildConnector } from 'undici';
import { OnelogError } from '../protocol/errors.js';

type Family = 'ipv4' | 'ipv6';

/** Ranges that are not globally reachable, by what they are (the refusal names it); the first that matches names it. */
const RANGES: ReadonlyArray<readonly [kind: string, family: Family, subnets: ReadonlyArray<readonly [prefix: string, bits: number]>]> = [
  ['a loopback address', 'ipv4', [['127.0.0.0', 8]]],
  ['a loopback address', 'ipv6', [['::1', 128]]],
  ['an unspecified address (this host)', 'ipv4', [['0.0.0.0', 8]]],
  ['an unspecified address (this host)', 'ipv6', [['::', 128]]],
  ['a private address', 'ipv4', [['10.0.0.0', 8], ['172.16.0.0', 12], ['192.168.0.0', 16]]],
  ['a unique-local address', 'ipv6', [['fc00::', 7], ['fec0::', 10]]],
  ['a shared address (carrier-grade NAT)', 'ipv4', [['100.64.0.0', 10]]],
  ['a link-local address (cloud metadata services)', 'ipv4', [['169.254.0.0', 16]]],
  ['a link-local address', 'ipv6', [['fe80::', 10]]],
  ['a multicast or broadcast address', 'ipv4', [['224.0.0.0', 4], ['255.255.255.255', 32]]],
  ['a multicast address', 'ipv6', [['ff00::', 8]]],
  ['a reserved address', 'ipv4', [['192.0.0.0', 24], ['192.88.99.0', 24], ['240.0.0.0', 4]]],
  ['a reserved address', 'ipv6', [['100::', 64], ['2001:10::', 28]]],
  ['a documentation or benchmarking address', 'ipv4', [['192.0.2.0', 24], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24]]],
  ['a documentation or benchmarking address', 'ipv6', [['2001:db8::', 32], ['3fff::', 20], ['2001:2::', 48]]],
  ['an IPv4-compatible address (deprecated)', 'ipv6', [['::', 96]]],
  ['a Teredo address (a tunnel to an IPv4 address)', 'ipv6', [['2001::', 32]]],
  ['a local-use NAT64 address', 'ipv6', [['64:ff9b:1::', 48]]],
];

const BLOCKS = RANGES.map(([kind, family, subnets]) => {
  const list = new net.BlockList();
  for (const [prefix, bits] of subnets) list.addSubnet(prefix, bits, family);
  return { kind, family, list };
});

/**
 * What internal kind of address `address` is (an IP literal, IPv6 with or without a `%zone`), so that it may not be a
 * webhook's destination, or null when it may be one: `a loopback address`, `the NAT64 form of 127.0.0.1, a loopback
 * address`, `an address of this machine (eth0)`. Not an IP at all: null (names are checked once resolved).
 * @param interfaces the machine's interfaces. @default os.networkInterfaces(), read now
 */
export function internalKind(address: string, interfaces: NodeJS.Dict<os.NetworkInterfaceInfo[]> = os.networkInterfaces()): string | null {
  const bare = address.replace(/%.*$/, '');
  const family = net.isIP(bare);
  if (family === 0) return null;
  const own = ownAddresses(interfaces);
  if (family === 4) return rangeOf(bare, 'ipv4', own);
  for (const [form, ipv4] of embeddedIpv4(ipv6Groups(bare))) {
    const kind = rangeOf(ipv4, 'ipv4', own);
    if (kind) return `the ${form} form of ${ipv4}, ${kind}`;
  }
  return rangeOf(bare, 'ipv6', own);
}

/** The kind of refused range `address` falls in (`a loopback address`), or null. */
function rangeOf(address: string, family: Family, own: ReadonlyArray<{ list: net.BlockList; name: string }>): string | null {
  for (const block of BLOCKS) if (block.family === family && block.list.check(address, family)) return block.kind;
  for (const { list, name } of own) if (list.check(address, family)) return `an address of this machine (${name})`;
  return null;
}

/** The machine's interface addresses, one list per interface. */
function ownAddresses(interfaces: NodeJS.Dict<os.NetworkInterfaceInfo[]>): Array<{ list: net.BlockList; name: string }> {
  return Object.entries(interfaces).map(([name, infos]) => {
    const list = new net.BlockList();
    for (const info of infos ?? []) list.addAddress(info.address.replace(/%.*$/, ''), info.family === 'IPv4' ? 'ipv4' : 'ipv6');
    return { list, name };
  });
}

/** The eight 16-bit groups of an IPv6 address, parsed by the WHATWG URL host parser (canonical: hex, one `::` at most). */
function ipv6Groups(address: string): number[] {
  const canonical = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  const [head = '', tail] = canonical.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return groups.map((g) => parseInt(g, 16));
}

/**
 * The IPv4 addresses an IPv6 address carries, with the form that carries each (RFC 4291, 6145, 6052, 3056). The
 * IPv4-compatible form (`::a.b.c.d`, deprecated) is refused whole, as a range.
 */
function embeddedIpv4(g: readonly number[]): Array<[form: string, ipv4: string]> {
  const dotted = (hi: number, lo: number): string => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  const zero = (from: number, to: number): boolean => g.slice(from, to).every((x) => x === 0);
  const out: Array<[string, string]> = [];
  if (zero(0, 5) && g[5] === 0xffff) out.push(['IPv4-mapped', dotted(g[6]!, g[7]!)]);
  if (zero(0, 4) && g[4] === 0xffff && g[5] === 0) out.push(['SIIT', dotted(g[6]!, g[7]!)]);
  if (g[0] === 0x64 && g[1] === 0xff9b && zero(2, 6)) out.push(['NAT64', dotted(g[6]!, g[7]!)]);
  if (g[0] === 0x2002) out.push(['6to4', dotted(g[1]!, g[2]!)]);
  return out;
}

/** How a policy resolves names. @default dns.lookup, as net.connect */
export type Resolver = (hostname: string, options: dns.LookupAllOptions, callback: (err: NodeJS.ErrnoException | null, addresses: dns.LookupAddress[]) => void) => void;

/** Where webhooks may go (BrokerOptions `webhookAllowPrivate`, `webhookDenyPrivate`). */
export interface OutboundOptions {
  /** Allow every http(s) destination, internal ones too (`serve --webhook-allow-private`). @default false */
  allowPrivate?: boolean;
  /**
   * Refuse internal destinations (`serve --webhook-deny-private`): the default, kept for compatibility. With
   * `allowPrivate` the two contradict each other. @default true unless allowPrivate
   */
  denyPrivate?: boolean;
  /** How host names resolve when a POST connects. @default dns.lookup */
  resolve?: Resolver;
}

/**
 * The broker's outbound policy, one per broker (Broker.open builds it from `webhookAllowPrivate` and
 * `webhookDenyPrivate`): {@link check} for URLs when given and before each POST, {@link dispatcher} for the POSTs'
 * connections. Closed with the broker.
 */
export class OutboundPolicy {
  /** Whether internal destinations are allowed (`--webhook-allow-private`); false: refused. */
  readonly allowPrivate: boolean;
  /** The connections of webhook POSTs (undici's fetch): checking every resolved and connected address unless internal ones are allowed. */
  readonly dispatcher: Agent;

  /** @throws OnelogError `INVALID_CONFIG` when both `allowPrivate` and `denyPrivate` are given true */
  constructor(options: OutboundOptions = {}) {
    if (options.allowPrivate === true && options.denyPrivate === true) {
      throw new OnelogError('INVALID_CONFIG', '--webhook-allow-private and --webhook-deny-private (webhookAllowPrivate, webhookDenyPrivate) ' +
        'contradict each other: internal destinations are refused by default; give --webhook-allow-private to allow them, or neither',
      { option: 'webhook-allow-private' });
    }
    this.allowPrivate = options.allowPrivate ?? false;
    this.dispatcher = new Agent({ connect: connector(options.resolve ?? dns.lookup, !this.allowPrivate) });
  }

  /**
   * @param field how the error names the URL (`pushEndpoint`, `url`)
   * @throws OnelogError `INVALID_REQUEST` unless `url` is an absolute http(s) URL; `FORBIDDEN` (`reason: private-address`)
   *   for an internal address ({@link internalKind}) or `localhost` when those are refused
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
    if (this.allowPrivate) return;
    // `localhost.` is `localhost`: a trailing dot names the same host. The URL parser already made 0x7f.1 127.0.0.1.
    const host = parsed.hostname.replace(/^\[|\]$/g, '').replace(/\.+$/, '');
    const kind = host === 'localhost' || host.endsWith('.localhost') ? 'a loopback name' : internalKind(host);
    if (kind) throw refused(field, url, `${host} is ${kind}`);
  }

  /** Closes the dispatcher's connections, aborting a request still on one (the broker's close, after its webhooks stopped). */
  async close(): Promise<void> {
    await this.dispatcher.destroy();
  }
}

function refused(field: string, url: string, why: string): OnelogError {
  return new OnelogError('FORBIDDEN', `${field} ${url} is refused: ${why}, and this broker sends webhooks to public addresses ` +
    'only (serve --webhook-allow-private allows internal ones)', { [field]: url, reason: 'private-address' });
}

/**
 * undici's connector, names resolved by `resolve`. When `checked`, with two checks: a name fails when any address it
 * resolves to is internal (so no connection to one is attempted); and once connected, the socket's remote address is
 * checked (an IP literal skips resolution), the socket destroyed before the request is written if it is internal.
 */
function connector(resolve: Resolver, checked: boolean): buildConnector.connector {
  const lookup = (hostname: string, options: dns.LookupOptions, callback: (err: Error | null, address: string | dns.LookupAddress[], family?: number) => void): void => {
    resolve(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, []);
      for (const { address } of checked ? addresses : []) {
        const kind = internalKind(address);
        if (kind) return callback(refused('webhook', hostname, `${hostname} resolves to ${address}, ${kind}`), []);
      }
      if (options.all) return callback(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
  const connect = buildConnector({ lookup });
  if (!checked) return connect;
  return (options, callback) => connect(options, (err, socket) => {
    if (err) return callback(err, null);
    const address = socket.remoteAddress;
    const kind = address === undefined ? null : internalKind(address);
    if (address === undefined || kind) {
      socket.destroy();
      const why = address === undefined ? 'the connection closed before its address was checked' : `the connection went to ${address}, ${kind}`;
      return callback(refused('webhook', options.hostname, why), null);
    }
    callback(null, socket);
  });
}
