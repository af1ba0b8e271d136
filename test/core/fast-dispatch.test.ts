import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { expect } from 'chai';
import express from 'express';
import { z } from 'zod';
import { Hooks } from '../../core/hooks';
import { errorHandler, notFound, requestContext } from '../../core/http/middleware';
import { appMessageClasses, dispatchDirect, targetPath } from '../../core/http/direct-dispatch';
import { RouteTable, mountRoutes } from '../../core/http/pipeline';
import { defineRoute, ok } from '../../core/http/route';
import { ApiError } from '../../core/errors';
import { createLogger } from '../../core/logger';
import { Metrics } from '../../core/metrics';

/** The map lookup in front of the Express router must answer exactly as the router would. */
const MODES = ['middleware before the router', 'server-level dispatch without the application router', 'server-level dispatch, messages born with the application prototypes'] as const;
for (const mode of MODES) describe(`kernel HTTP pipeline: direct dispatch of parameterless routes (${mode})`, () => {
  let server: Server;
  let base: string;
  let bornRequestProto: object | null = null;

  before(async () => {
    const table = new RouteTable();
    table.add('t', defineRoute({ id: 't.param', method: 'get', path: '/things/:id', summary: 'by id', auth: 'public', handler: ({ req }) => ok({ by: 'param', id: req.params.id }) }));
    // Declared after /things/:id, so Express serves /things/latest with the parameterised route.
    table.add('t', defineRoute({ id: 't.latest', method: 'get', path: '/things/latest', summary: 'latest', auth: 'public', handler: () => ok({ by: 'static' }) }));
    // Parameterised: always routed by Express itself.
    table.add('t', defineRoute({ id: 't.proto', method: 'get', path: '/protos/:id', summary: 'prototype', auth: 'public', handler: ({ req }) => ok({ born: Object.getPrototypeOf(req) === bornRequestProto, express: typeof req.get === 'function' }) }));
    table.add('t', defineRoute({ id: 't.hello', method: 'get', path: '/hello', summary: 'hello', auth: 'public', handler: () => ok({ hello: 'wörld' }) }));
    table.add('t', defineRoute({ id: 't.echo', method: 'post', path: '/echo', summary: 'echo', auth: 'public', body: z.object({ n: z.number() }), handler: ({ body }) => ok({ n: body.n }, { 'X-Extra': 'yes' }) }));
    table.add('t', defineRoute({ id: 't.boom', method: 'get', path: '/boom', summary: 'fails', auth: 'public', handler: () => { throw new ApiError('rate_limited', 'Slow down.'); } }));
    table.add('t', defineRoute({ id: 't.typed', method: 'get', path: '/typed', summary: 'own type', auth: 'public', handler: () => ok({ t: 1 }, { 'Content-Type': 'application/problem+json' }) }));
    const log = createLogger('silent');
    const app = express();
    app.disable('x-powered-by');
    app.disable('etag');
    const leading = [requestContext(log, new Metrics({ defaultMetrics: false }))];
    app.use(leading);
    const router = express.Router();
    const direct = mountRoutes(router, table, { hooks: new Hooks(), log, bodyLimitBytes: 10_000, bodyMaxDepth: 64 });
    app.use(direct.middleware);
    app.use(router);
    app.use(notFound);
    const onError = errorHandler(log);
    app.use(onError);
    const serve = (req: IncomingMessage, res: ServerResponse) => {
      const stages = direct.lookup(req.method, targetPath(req.url));
      if (stages) dispatchDirect(app, req, res, leading, stages, onError);
      else app(req, res);
    };
    const born = mode === MODES[2] ? appMessageClasses(app) : null;
    bornRequestProto = born?.IncomingMessage.prototype ?? null;
    server = mode === MODES[0] ? createServer(app) : mode === MODES[1] ? createServer(serve) : createServer(born ?? {}, serve);
    server.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  it('gives a request its Express prototypes per request only when the server does not make them so', async () => {
    const original = Object.setPrototypeOf;
    let calls = 0;
    Object.setPrototypeOf = ((o: object, proto: object | null) => {
      calls++;
      return original(o, proto);
    }) as typeof Object.setPrototypeOf;
    try {
      const res = await fetch(`${base}/hello`);
      expect(res.status).to.equal(200);
      expect(await res.json()).to.deep.equal({ hello: 'wörld' });
    } finally {
      Object.setPrototypeOf = original;
    }
    // Express's own app.handle sets both; direct dispatch only when the messages lack them.
    expect(calls).to.equal(mode === MODES[2] ? 0 : 2);
  });

  it('requests Express routes itself keep the prototype they were born with, and have Express methods', async () => {
    const res = await fetch(`${base}/protos/1`);
    expect(res.status).to.equal(200);
    expect(await res.json()).to.deep.equal({ born: mode === MODES[2], express: true });
  });

  it('answers JSON with the headers res.json would send', async () => {
    const res = await fetch(`${base}/hello`);
    const text = await res.text();
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.equal('application/json; charset=utf-8');
    expect(Number(res.headers.get('content-length'))).to.equal(Buffer.byteLength(text));
    expect(JSON.parse(text)).to.deep.equal({ hello: 'wörld' });
    expect(res.headers.get('etag')).to.equal(null);
  });

  it('leaves a static path that an earlier parameterised route matches to that route', async () => {
    expect(await (await fetch(`${base}/things/latest`)).json()).to.deep.equal({ by: 'param', id: 'latest' });
  });

  it('other spellings (case, trailing slash) and HEAD still reach the route through the router', async () => {
    expect(await (await fetch(`${base}/HELLO`)).json()).to.deep.equal({ hello: 'wörld' });
    expect(await (await fetch(`${base}/hello/`)).json()).to.deep.equal({ hello: 'wörld' });
    const head = await fetch(`${base}/hello`, { method: 'HEAD' });
    expect(head.status).to.equal(200);
    expect(await head.text()).to.equal('');
  });

  it('reads and validates bodies, sets reply headers, and keeps a route-chosen content type', async () => {
    const res = await fetch(`${base}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":3}' });
    expect(res.headers.get('x-extra')).to.equal('yes');
    expect(await res.json()).to.deep.equal({ n: 3 });
    const bad = await fetch(`${base}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":"x"}' });
    expect(bad.status).to.equal(400);
    const typed = await fetch(`${base}/typed`);
    expect(typed.headers.get('content-type')).to.equal('application/problem+json; charset=utf-8');
  });

  it('hands errors to the error handler, and other methods still get 405', async () => {
    const boom = await fetch(`${base}/boom`);
    expect(boom.status).to.equal(429);
    expect(((await boom.json()) as { code: string }).code).to.equal('rate_limited');
    const wrong = await fetch(`${base}/hello`, { method: 'POST' });
    expect(wrong.status).to.equal(405);
    expect(wrong.headers.get('allow')).to.equal('GET, HEAD');
  });
});
