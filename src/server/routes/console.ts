/**
 * The web console at `/`: the static bundle `npm run build` writes to dist/console (console/ holds its
 * source), served by @fastify/static. Only its files get routes, so unknown paths still answer `NOT_FOUND`.
 * Without a build, `/` says how to make one. The files are public (the permission table); the data the console
 * shows comes from the API, with the token the console asks for once the broker has users.
 */
import fs from 'node:fs';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';

/** Where the console's bundle is, from src/server/routes or dist/server/routes alike. */
const CONSOLE_DIR = path.resolve(import.meta.dirname, '../../../dist/console');

/** A fastify plugin: `app.register(consoleRoutes, { dir })`; `dir` defaults to {@link CONSOLE_DIR}. */
export async function consoleRoutes(app: FastifyInstance, { dir = CONSOLE_DIR }: { dir?: string }): Promise<void> {
  app.addHook('onRoute', (route) => {
    route.config = { ...route.config, consoleFile: true };
  });
  if (!fs.existsSync(path.join(dir, 'index.html'))) {
    app.get('/', async (_request, reply) => reply.status(503).type('text/plain')
      .send(`the web console is not built: run npm run build (it writes ${dir})\n`));
    return;
  }
  await app.register(fastifyStatic, { root: dir, prefix: '/', wildcard: false, index: 'index.html' });
}
