/**
 * Several server URLs: the HTTP and binary clients and the CLI go on at the next URL when a server cannot be
 * reached, over real sockets to real `onelog serve` processes (two independent brokers stand in for a
 * cluster's: which one answered shows in what it holds).
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BinaryApi } from '../../src/client/binary-api.js';
import { HttpApi, parseServerUrls } from '../../src/client/http-api.js';
import { runCli, startServer } from '../helpers/processes.js';
import type { ServerProcess } from '../helpers/processes.js';
import { tmpDir } from '../helpers/tmp.js';

/** A loopback URL nothing listens on (a port just given back): connections are refused. */
async function deadUrl(): Promise<string> {
  const server = net.createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

let DEAD: string;
let DEAD2: string;
let a: ServerProcess;
let b: ServerProcess;

beforeAll(async () => {
  DEAD = await deadUrl();
  DEAD2 = await deadUrl();
  [a, b] = await Promise.all([startServer(tmpDir()), startServer(tmpDir())]);
  await new HttpApi(a.url).createTopic({ topic: 'on-a', partitions: 1 });
  await new HttpApi(b.url).createTopic({ topic: 'on-b', partitions: 1 });
});
afterAll(async () => {
  await a?.stop('SIGKILL');
  await b?.stop('SIGKILL');
});

describe('several server URLs', () => {
  it('a request to a server that refuses connections goes to the next URL, and the client stays there', async () => {
    const api = new HttpApi(`${DEAD}, ${b.url}/`);
    expect(api.urls).toEqual([DEAD, b.url]);
    expect((await api.listTopics()).map((t) => t.topic)).toEqual(['on-b']);
    expect(api.url).toBe(b.url);
    // A write was not sent either: it goes on too.
    const api2 = new HttpApi(`${DEAD},${b.url}`);
    await api2.createTopic({ topic: 'written-via-failover', partitions: 1 });
    expect((await new HttpApi(b.url).listTopics()).map((t) => t.topic)).toContain('written-via-failover');
  });

  it('when every server is down, NETWORK_ERROR names them all', async () => {
    const api = new HttpApi(`${DEAD},${DEAD2}`);
    await expect(api.listTopics()).rejects.toMatchObject({ code: 'NETWORK_ERROR', message: expect.stringContaining(`servers: ${DEAD}, ${DEAD2}`) as unknown });
  });

  it('the binary data path opens its socket at the next URL', async () => {
    const api = new BinaryApi(`${DEAD},${b.url}`);
    try {
      const produced = await api.produce({ topic: 'on-b', records: [{ key: null, value: Buffer.from('via the next URL') }] });
      expect(produced.offsets).toEqual([{ partition: 0, offset: 0 }]);
      const fetched = await api.fetch({ topic: 'on-b', partitions: [{ partition: 0, offset: 0 }] });
      expect(fetched.partitions[0]!.records.map((r) => r.value!.toString())).toEqual(['via the next URL']);
    } finally {
      api.close();
    }
  });

  it('a server that stops: the next requests go to the next URL', async () => {
    const c = await startServer(tmpDir());
    const api = new HttpApi(`${c.url},${a.url}`);
    await api.createTopic({ topic: 'on-c', partitions: 1 });
    expect((await api.listTopics()).map((t) => t.topic)).toEqual(['on-c']);
    await c.stop('SIGKILL');
    expect((await api.listTopics()).map((t) => t.topic)).toEqual(['on-a']);
    expect(api.url).toBe(a.url);
  });

  it('the CLI takes --server URL1,URL2 and ONELOG_URL with several URLs; a bad URL is named', async () => {
    const viaFlag = await runCli(DEAD, ['--server', `${DEAD},${a.url}`, 'topics', 'list']);
    expect(viaFlag).toMatchObject({ code: 0 });
    expect(viaFlag.stdout).toContain('on-a');
    const viaEnv = await runCli(`${DEAD},${b.url}`, ['topics', 'list']);
    expect(viaEnv.stdout).toContain('on-b');
    const bad = await runCli(DEAD, ['--server', `${a.url},ftp://x`, 'topics', 'list']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/server URL "ftp:\/\/x" is not an http:\/\/ or https:\/\/ URL/);
    expect(() => parseServerUrls(' , ')).toThrow(/no server URL/);
    for (const wrong of ['http://127.0.0.1:7301;http://127.0.0.1:7302', 'http://127.0.0.1:7301 http://127.0.0.1:7302', 'http://127.0.0.1:notaport', 'http://[::1']) {
      expect(() => parseServerUrls(wrong), wrong).toThrow(/is not an http:\/\/ or https:\/\/ URL/);
    }
    expect(parseServerUrls('HTTP://127.0.0.1:7301/, https://h:1')).toEqual(['http://127.0.0.1:7301', 'https://h:1']);
    // fetch refuses credentials in a URL, quoting it: refused here, redacted, naming the token instead.
    expect(() => parseServerUrls('http://127.0.0.1:7301, https://u:p@h:1')).toThrow(/"https:\/\/\*\*\*@h:1" holds a user name or password.*--token/);
    expect(() => parseServerUrls('http://u:secret@h:x')).toThrow(/"http:\/\/\*\*\*@h:x"/);
  });
});
