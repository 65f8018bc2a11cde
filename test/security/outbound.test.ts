/**
 * Where webhooks may go (src/security/outbound.ts, docs/security.md): the table of internal addresses, IPv4 and
 * IPv6, the IPv6 forms that carry an IPv4 address (IPv4-mapped, SIIT, NAT64, 6to4), the machine's own interface
 * addresses; URLs checked when given; and the checks when a POST connects, against a real HTTP server on 127.0.0.1:
 * every address a name resolves to, and the address the socket connected to.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { postBatch } from '../../src/security/webhook-post.js';
import { internalKind, OutboundPolicy } from '../../src/security/outbound.js';
import type { OutboundOptions, Resolver } from '../../src/security/outbound.js';
import { errorOf } from '../helpers/errors.js';

/** No interfaces: the table alone decides. */
const NONE = {};

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

function policy(options: OutboundOptions = {}): OutboundPolicy {
  const p = new OutboundPolicy(options);
  closers.push(() => p.close());
  return p;
}

/** An HTTP server on 127.0.0.1 that answers 200 and counts the requests it got. */
async function receiver(): Promise<{ port: number; requests: () => number }> {
  let requests = 0;
  const server = http.createServer((req, res) => {
    requests++;
    req.resume().on('end', () => res.end('ok'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  }));
  return { port: (server.address() as AddressInfo).port, requests: () => requests };
}

const octet = fc.integer({ min: 0, max: 255 });
const hex = (n: number) => n.toString(16);
/** The two 16-bit groups of an IPv4 address, in hex. */
const groups = (a: number, b: number, c: number, d: number) => `${hex((a << 8) | b)}:${hex((c << 8) | d)}`;

describe('internal addresses', () => {
  it('refuses each kind, naming it, and lets public addresses (and the forms carrying them) through', () => {
    const refused: Array<[string, RegExp]> = [
      ['127.0.0.1', /^a loopback address$/], ['127.255.255.254', /loopback/], ['::1', /^a loopback address$/],
      ['0.0.0.0', /unspecified/], ['::', /unspecified/], ['0:0:0:0:0:0:0:0', /unspecified/],
      ['10.2.3.4', /private/], ['172.20.0.1', /private/], ['192.168.1.1', /private/],
      ['100.64.0.1', /carrier-grade NAT/], ['169.254.169.254', /link-local address \(cloud metadata/], ['fe80::1', /link-local/],
      ['fe80::1%eth0', /link-local/], ['fd00::1', /unique-local/], ['fc00::7', /unique-local/],
      ['224.0.0.1', /multicast/], ['255.255.255.255', /broadcast/], ['ff02::1', /multicast/], ['240.0.0.1', /reserved/],
      ['192.0.2.10', /documentation/], ['2001:db8::1', /documentation/], ['198.18.0.1', /benchmarking/],
      // IPv6 forms that carry an internal IPv4 address.
      ['::ffff:127.0.0.1', /^the IPv4-mapped form of 127\.0\.0\.1, a loopback address$/], ['::ffff:7f00:1', /IPv4-mapped form of 127\.0\.0\.1/],
      ['0:0:0:0:0:ffff:a9fe:a9fe', /IPv4-mapped form of 169\.254\.169\.254/], ['::ffff:0:127.0.0.1', /^the SIIT form of 127\.0\.0\.1/],
      ['64:ff9b::127.0.0.1', /^the NAT64 form of 127\.0\.0\.1, a loopback address$/], ['64:ff9b::7f00:1', /NAT64 form of 127\.0\.0\.1/],
      ['64:FF9B::A9FE:A9FE', /^the NAT64 form of 169\.254\.169\.254, a link-local address/], ['64:ff9b::a00:1', /NAT64 form of 10\.0\.0\.1/],
      ['2002:7f00:1::', /^the 6to4 form of 127\.0\.0\.1, a loopback address$/], ['2002:a9fe:a9fe::1', /^the 6to4 form of 169\.254\.169\.254/],
      ['2002:a9fe:a9fe:ffff:ffff:ffff:ffff:ffff', /6to4 form of 169\.254\.169\.254/], ['2002:c0a8:101::', /6to4 form of 192\.168\.1\.1/],
      ['::127.0.0.1', /IPv4-compatible/], ['::8.8.8.8', /IPv4-compatible/], ['2001:0:4136:e378:8000:63bf:3fff:fdd2', /Teredo/],
      ['64:ff9b:1::808:808', /local-use NAT64/],
    ];
    expect(refused.filter(([address, kind]) => !kind.test(internalKind(address, NONE) ?? 'allowed'))
      .map(([address]) => `${address}: ${internalKind(address, NONE)}`)).toEqual([]);
    const allowed = ['93.184.216.34', '8.8.8.8', '1.1.1.1', '2606:4700::1111', '2a00:1450:4001:82f::200e', '::ffff:8.8.8.8',
      '64:ff9b::808:808', '64:ff9b::8.8.8.8', '2002:808:808::1', 'example.com', 'not an address'];
    expect(allowed.filter((address) => internalKind(address, NONE) !== null)).toEqual([]);
  });

  it('any address of 127/8 or 169.254/16, as itself, IPv4-mapped, NAT64 or 6to4 (any rest of the 6to4 address)', () => {
    const internal = fc.tuple(fc.constantFrom([127, 'loopback'] as const, [169, 'link-local'] as const), octet, octet, octet)
      .map(([[first, kind], b, c, d]) => ({ octets: [first, first === 169 ? 254 : b, c, d] as const, kind }));
    const form = fc.constantFrom('itself', 'mapped', 'mapped-dotted', 'nat64', 'nat64-dotted', '6to4');
    const rest = fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 5, maxLength: 5 }).map((gs) => gs.map(hex).join(':'));
    fc.assert(fc.property(internal, form, rest, ({ octets: [a, b, c, d], kind }, f, tail) => {
      const dotted = `${a}.${b}.${c}.${d}`;
      const address = {
        itself: dotted, mapped: `::ffff:${groups(a, b, c, d)}`, 'mapped-dotted': `::ffff:${dotted}`, nat64: `64:ff9b::${groups(a, b, c, d)}`,
        'nat64-dotted': `64:ff9b::${dotted}`, '6to4': `2002:${groups(a, b, c, d)}:${tail}`,
      }[f];
      expect(internalKind(address, NONE), address).toContain(kind);
      expect(internalKind(address, NONE), address).toContain(f === 'itself' ? kind : dotted);
    }));
  });

  it('any public IPv4 address passes as itself and in every form carrying it', () => {
    // 8/8 and 1/8 hold public addresses only.
    const pub = fc.tuple(fc.constantFrom(8, 1), octet, octet, octet);
    fc.assert(fc.property(pub, ([a, b, c, d]) => {
      for (const address of [`${a}.${b}.${c}.${d}`, `::ffff:${a}.${b}.${c}.${d}`, `64:ff9b::${groups(a, b, c, d)}`, `2002:${groups(a, b, c, d)}::1`]) {
        expect(internalKind(address, NONE), address).toBeNull();
      }
    }));
  });

  it('the machine\'s own interface addresses, public ones too, and the forms carrying them', () => {
    const machine: NodeJS.Dict<os.NetworkInterfaceInfo[]> = {
      eth0: [
        { address: '93.184.216.34', family: 'IPv4', netmask: '255.255.255.0', mac: '02:00:00:00:00:01', internal: false, cidr: '93.184.216.34/24' },
        { address: '2606:4700::6810:84e5', family: 'IPv6', netmask: 'ffff:ffff:ffff:ffff::', mac: '02:00:00:00:00:01', internal: false, cidr: null, scopeid: 0 },
      ],
    };
    expect(internalKind('93.184.216.34', machine)).toBe('an address of this machine (eth0)');
    expect(internalKind('2606:4700:0:0:0:0:6810:84e5', machine)).toBe('an address of this machine (eth0)');
    expect(internalKind('64:ff9b::5db8:d822', machine)).toBe('the NAT64 form of 93.184.216.34, an address of this machine (eth0)');
    expect(internalKind('2002:5db8:d822::', machine)).toBe('the 6to4 form of 93.184.216.34, an address of this machine (eth0)');
    expect(internalKind('93.184.216.35', machine)).toBeNull();
    // This machine's real interfaces, read by default.
    const own = Object.values(os.networkInterfaces()).flatMap((infos) => infos ?? []).map((i) => i.address);
    expect(own.length).toBeGreaterThan(0);
    expect(own.filter((address) => internalKind(address) === null)).toEqual([]);
  });
});

describe('URLs when given', () => {
  it('refuses internal literals in every spelling, localhost and the machine\'s own addresses; allows them all with allowPrivate', () => {
    const urls = ['http://127.0.0.1:9/hook', 'http://2130706433/', 'http://0x7f.1/', 'http://127.1/', 'http://[::1]/', 'http://[::ffff:127.0.0.1]/',
      'http://[64:ff9b::127.0.0.1]/', 'http://[64:ff9b::a9fe:a9fe]/latest/meta-data/', 'http://[2002:a9fe:a9fe::]/latest/meta-data/',
      'https://169.254.169.254/', 'http://0.0.0.0:7070/', 'http://[::]/', 'http://localhost:8080/', 'http://LOCALHOST./x', 'http://metadata.localhost/',
      ...Object.values(os.networkInterfaces()).flatMap((infos) => infos ?? []).filter((i) => !i.address.includes('%'))
        .map((i) => (i.family === 'IPv6' ? `http://[${i.address}]/` : `http://${i.address}/`))];
    const deny = policy();
    expect(urls.filter((url) => {
      const err = errorOf(() => deny.check(url, 'pushEndpoint'));
      return err.code !== 'FORBIDDEN' || err.context?.reason !== 'private-address' || !err.message.includes('--webhook-allow-private');
    })).toEqual([]);
    expect(errorOf(() => deny.check('http://[64:ff9b::7f00:1]/', 'pushEndpoint')).message)
      .toBe('pushEndpoint http://[64:ff9b::7f00:1]/ is refused: 64:ff9b::7f00:1 is the NAT64 form of 127.0.0.1, a loopback address, and this ' +
        'broker sends webhooks to public addresses only (serve --webhook-allow-private allows internal ones)');
    deny.check('https://93.184.216.34/hook', 'pushEndpoint');
    deny.check('https://hooks.example.com/hook', 'pushEndpoint'); // a name: checked when the POST connects
    expect(errorOf(() => deny.check('ftp://example.com/x', 'pushEndpoint')).code).toBe('INVALID_REQUEST');

    const allow = policy({ allowPrivate: true });
    for (const url of urls) allow.check(url, 'pushEndpoint');
    expect(errorOf(() => allow.check('ftp://example.com/x', 'pushEndpoint')).code).toBe('INVALID_REQUEST');
  });

  it('refuses by default; denyPrivate is the default; both allowPrivate and denyPrivate is INVALID_CONFIG', () => {
    expect(policy().allowPrivate).toBe(false);
    expect(policy({ denyPrivate: true }).allowPrivate).toBe(false);
    expect(policy({ allowPrivate: true, denyPrivate: false }).allowPrivate).toBe(true);
    const err = errorOf(() => new OutboundPolicy({ allowPrivate: true, denyPrivate: true }));
    expect(err.code).toBe('INVALID_CONFIG');
    expect(err.message).toMatch(/--webhook-allow-private and --webhook-deny-private .* contradict each other/);
  });
});

describe('when a POST connects', () => {
  it('a name resolving to an internal address among public ones is refused before any connection', async () => {
    const server = await receiver();
    const internal = fc.constantFrom('127.0.0.1', '::1', '10.1.2.3', '169.254.169.254', '64:ff9b::7f00:1', '2002:a9fe:a9fe::', '::ffff:127.0.0.1');
    const pub = fc.constantFrom('93.184.216.34', '8.8.4.4', '2606:4700::1111', '64:ff9b::808:808');
    await fc.assert(fc.asyncProperty(fc.array(pub, { maxLength: 3 }), internal, fc.nat(), async (publics, bad, at) => {
      const addresses: string[] = [...publics];
      addresses.splice(at % (publics.length + 1), 0, bad);
      const resolve: Resolver = (_name, _options, callback) =>
        callback(null, addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })));
      const outcome = await postBatch(`http://hooks.example:${server.port}/hook`, '{}', {}, 5000, new AbortController(), policy({ resolve }));
      expect(outcome.ok).toBe(false);
      expect(!outcome.ok && outcome.error).toContain(`hooks.example resolves to ${bad}, `);
    }), { numRuns: 40 });
    expect(server.requests()).toBe(0);
  });

  it('a name resolving to loopback only: refused by default, delivered with allowPrivate', async () => {
    const server = await receiver();
    const resolve: Resolver = (_name, _options, callback) => callback(null, [{ address: '127.0.0.1', family: 4 }]);
    const url = `http://rebound.example:${server.port}/hook`;
    const refused = await postBatch(url, '{}', {}, 5000, new AbortController(), policy({ resolve }));
    expect(!refused.ok && refused.error).toMatch(/rebound\.example resolves to 127\.0\.0\.1, a loopback address/);
    expect(server.requests()).toBe(0);
    // The system resolver: localhost resolves to loopback.
    const local = await postBatch(`http://localhost:${server.port}/hook`, '{}', {}, 5000, new AbortController(), policy());
    expect(!local.ok && local.error).toMatch(/localhost is a loopback name/);
    expect(server.requests()).toBe(0);

    expect(await postBatch(url, '{}', {}, 5000, new AbortController(), policy({ allowPrivate: true, resolve }))).toEqual({ ok: true, status: 200 });
    expect(await postBatch(`http://localhost:${server.port}/hook`, '{}', {}, 5000, new AbortController(), policy({ allowPrivate: true })))
      .toEqual({ ok: true, status: 200 });
    expect(server.requests()).toBe(2);
  });

  it('the address connected to is checked, also when nothing resolved it (an IP literal past the URL check)', async () => {
    const server = await receiver();
    const deny = policy();
    // The dispatcher alone, without OutboundPolicy.check before it: the connection's remote address decides.
    const err = await deny.dispatcher.request({ origin: `http://127.0.0.1:${server.port}`, path: '/hook', method: 'POST', body: '{}' })
      .then(() => null, (e: unknown) => e as Error);
    expect(err?.message).toMatch(/the connection went to 127\.0\.0\.1, a loopback address/);
    expect(server.requests()).toBe(0);
  });
});
