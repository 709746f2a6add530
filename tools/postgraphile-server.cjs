// PostGraphile v4 as a tenant nobody here wrote: its defaults over the tests' PostgreSQL, behind a bearer token
// check against an identity provider's JWKS (the sandbox's), in a process of its own. Started by postgraphile-tenant.ts.
//
// Why a process of its own, and the resolver hook below: PostGraphile v4 needs graphql 15, the app graphql 16. npm
// nests graphql 15 under postgraphile but hoists graphql-parse-resolve-info (whose peer range takes both) beside the
// app's graphql 16, so in one module graph PostGraphile's schema meets a second graphql ("Cannot use
// GraphQLScalarType from another module"). In this process every `graphql` is PostGraphile's. On upgrade (v5 uses
// graphql 16) the hook can go.
'use strict';
const Module = require('node:module');
const { dirname, join } = require('node:path');
const http = require('node:http');
const { Buffer } = require('node:buffer');

const postgraphileDir = dirname(require.resolve('postgraphile/package.json'));
const ownGraphql = join(postgraphileDir, 'node_modules', 'graphql');
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, parent, ...rest) {
  if (request === 'graphql' || request.startsWith('graphql/'))
    return resolve.call(this, ownGraphql + request.slice('graphql'.length), parent, ...rest);
  return resolve.call(this, request, parent, ...rest);
};

const { postgraphile } = require('postgraphile');

async function main() {
  const env = process.env;
  const { createRemoteJWKSet, jwtVerify } = await import('jose');
  const jwks = createRemoteJWKSet(new URL(env.PG_TENANT_JWKS));
  const plugins = (env.PG_TENANT_PLUGINS || '')
    .split(',')
    .filter(Boolean)
    .map((name) => {
      const m = require(name);
      return m.default || m;
    });
  const handler = postgraphile(env.PG_TENANT_DATABASE_URL, env.PG_TENANT_SCHEMA || 'app', {
    appendPlugins: plugins,
    graphqlRoute: '/graphql',
    retryOnInitFail: false,
    disableQueryLog: true,
    ...(env.PG_TENANT_OPTIONS ? JSON.parse(env.PG_TENANT_OPTIONS) : {}),
  });
  const stats = { requests: 0, refused: 0, served: 0 };
  // PG_TENANT_COUNT: a key every record of the counted table answers once (`"sensor":`): the server's own count of
  // the records it served, for the peer bench (bench/peers.ts). A byte search of each answer, whoever asks.
  const marker = env.PG_TENANT_COUNT ? Buffer.from(env.PG_TENANT_COUNT) : undefined;
  const countIn = (chunk) => {
    if (!marker || chunk === undefined || chunk === null || typeof chunk === 'function') return;
    const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    for (let at = b.indexOf(marker); at !== -1; at = b.indexOf(marker, at + marker.length)) stats.served++;
  };
  const server = http.createServer(async (req, res) => {
    if (req.url === '/_stats' || req.url === '/_stats?reset=1') {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(stats));
      if (req.url.endsWith('reset=1')) Object.assign(stats, { requests: 0, refused: 0, served: 0 });
      return;
    }
    if (marker) {
      const { write, end } = res;
      res.write = function (chunk, ...rest) {
        countIn(chunk);
        return write.call(this, chunk, ...rest);
      };
      res.end = function (chunk, ...rest) {
        countIn(chunk);
        return end.call(this, chunk, ...rest);
      };
    }
    const auth = req.headers.authorization || '';
    try {
      if (!auth.startsWith('Bearer ')) throw new Error('no token');
      await jwtVerify(auth.slice(7), jwks, { issuer: env.PG_TENANT_ISSUER });
    } catch {
      stats.refused++;
      res.statusCode = 401;
      res.setHeader('www-authenticate', 'Bearer error="invalid_token"');
      res.setHeader('content-type', 'application/json');
      return res.end(JSON.stringify({ errors: [{ message: 'a valid bearer token is required' }] }));
    }
    stats.requests++;
    handler(req, res);
  });
  server.listen(0, '127.0.0.1', () => {
    process.stdout.write(`listening ${server.address().port}\n`);
  });
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}

main().catch((e) => {
  process.stderr.write(`${e && e.stack}\n`);
  process.exit(1);
});
