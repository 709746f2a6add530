import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './collector';
import { serveBehindSandbox } from './json-graphql';

/**
 * A real Graphene-Django tenant (tools/graphene-tenant: Django, graphene-django, django-filter from PyPI, in
 * .ci/graphene-venv, which `.ci/run` makes), on SQLite in a temp folder, served by Django's own server on loopback
 * and reached through a proxy that checks the sandbox's bearer token — a server framework nobody here wrote, with its
 * defaults.
 */
const ROOT = resolve(__dirname, '..', '..');
const APP = join(ROOT, 'tools', 'graphene-tenant');
export const GRAPHENE_PYTHON = join(ROOT, '.ci', 'graphene-venv', 'bin', 'python');
const run = promisify(execFile);

export async function startGrapheneTenant(options: { inspections: number }) {
  if (!existsSync(GRAPHENE_PYTHON))
    throw new Error(
      `Graphene-Django is not installed in ${GRAPHENE_PYTHON}: run bash .ci/run, or python3 -m venv .ci/graphene-venv && .ci/graphene-venv/bin/pip install 'Django>=5.0,<6' 'graphene-django>=3.2,<4' 'django-filter>=24,<26'`,
    );
  const dir = await mkdtemp(join(tmpdir(), 'ti-graphene-'));
  const env = {
    ...process.env,
    GRAPHENE_TENANT_DB: join(dir, 'tenant.sqlite3'),
    PYTHONDONTWRITEBYTECODE: '1',
  };
  await run(GRAPHENE_PYTHON, ['seed.py', String(options.inspections)], { cwd: APP, env, timeout: 120_000 });
  const port = await freePort();
  const django: ChildProcess = spawn(
    GRAPHENE_PYTHON,
    ['manage.py', 'runserver', `127.0.0.1:${port}`, '--noreload', '--nothreading'],
    { cwd: APP, env, stdio: 'ignore' },
  );
  const origin = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    const up = await fetch(`${origin}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"query":"{ __typename }"}',
    }).then(
      (r) => r.ok,
      () => false,
    );
    if (up) break;
    if (i > 100 || django.exitCode !== null) throw new Error('Django did not start');
    await new Promise((r) => setTimeout(r, 200));
  }
  // What the app sends goes to Django as it came; what Django answers comes back as it went.
  const proxy = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const answer = await fetch(`${origin}/graphql`, {
      method: req.method,
      headers: { 'content-type': req.headers['content-type'] ?? 'application/json' },
      body: req.method === 'GET' ? undefined : Buffer.concat(chunks),
    });
    res.writeHead(answer.status, {
      'content-type': answer.headers.get('content-type') ?? 'application/json',
    });
    res.end(Buffer.from(await answer.arrayBuffer()));
  };
  const served = await serveBehindSandbox(proxy);
  return {
    ...served,
    /** Changes these inspections as a bulk edit would (status and updated_at, in one queryset update). */
    change: async (ids: number[]) =>
      run(GRAPHENE_PYTHON, ['change.py', ...ids.map(String)], { cwd: APP, env, timeout: 60_000 }),
    stop: async () => {
      django.kill();
      await served.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export type GrapheneTenant = Awaited<ReturnType<typeof startGrapheneTenant>>;
