import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HttpRequest, HttpResponse, InvocationContext } from '@azure/functions';
import { OffsetClock, registerHostClock } from '../shared/clock';
import { problem, registerErrors } from '../shared/errors';
import type { Logger } from '../shared/log';
import { DurableApi } from './durable/api';
import { DurableEngine } from './durable/engine';
import { DurableHttpError } from './durable/protocol';
import { DurableStore } from './durable/store';
import { registrations, triggerOf, type Registration } from './functions-core';
import { LOCAL_HOST_ERRORS } from './errors';
import { BODY_LIMIT, readBody, refuse, reply } from './reply';
import { compileRoute } from './routes';
import { TimerRunner } from './timers';

// The local host's own codes, registered as it loads (the app registers its features' as it is composed).
registerErrors('devhost', LOCAL_HOST_ERRORS);

export interface HostKeys {
  master: string;
  function: string;
  system: string;
}

export interface HostOptions {
  port: number;
  storageConnection: string;
  hub: string;
  keys?: Partial<HostKeys>;
  logger: Logger;
  /** Resolves `%SETTING%` in binding values, as the host does. */
  env: Record<string, string | undefined>;
  /**
   * How long an activity's result waits before its orchestration sees it: Azure's control queues are polled, up
   * to host.json's maxQueuePollingInterval (10 s) when idle. 0 (the default) delivers at once; tests set it to
   * widen the moments an orchestration is still completing after its last activity.
   */
  queueLatencyMs?: number;
}

interface HttpRoute {
  name: string;
  pattern: RegExp;
  methods: string[];
  authLevel: string;
  reg: Registration;
}

const newKey = () => randomBytes(24).toString('base64url');

function sameKey(given: string | null | undefined, expected: string): boolean {
  if (!given) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * The local host: plays the Functions worker's part for the app's registrations (HTTP routes with their
 * auth levels, timers, durable orchestrations and activities, the durable client's HTTP API).
 * Development and tests only; production runs on Azure Functions.
 */
export class LocalHost {
  readonly clock = new OffsetClock();
  readonly keys: HostKeys;
  readonly engine: DurableEngine;
  readonly timers: TimerRunner;
  private readonly durable: DurableApi;
  private server?: Server;
  private readonly httpRoutes: HttpRoute[] = [];
  baseUrl = '';

  constructor(private readonly o: HostOptions) {
    // The app reads time through `appClock`: moving the host's clock moves the app's too.
    registerHostClock(this.clock);
    this.keys = {
      master: o.keys?.master ?? newKey(),
      function: o.keys?.function ?? newKey(),
      system: o.keys?.system ?? newKey(),
    };
    this.engine = new DurableEngine(
      new DurableStore(o.storageConnection, o.hub),
      registrations,
      this.clock,
      o.logger,
      { queueLatencyMs: o.queueLatencyMs },
    );
    this.durable = new DurableApi(this.engine, () => this.clientData().managementUrls);
    for (const [name, reg] of registrations) {
      const t = triggerOf(reg.metadata);
      if (t.type !== 'httpTrigger') continue;
      // Azure Functions refuses these (azure-functions-host #1781); refusing them here catches it locally.
      if (/^admin/i.test(String(t.route ?? name))) {
        throw new Error(
          `function "${name}": the specified route conflicts with one or more built in routes (routes may not start with "admin")`,
        );
      }
      this.httpRoutes.push({
        name,
        pattern: compileRoute(String(t.route ?? name)),
        methods: ((t.methods as string[] | undefined) ?? ['GET', 'POST']).map((m) => m.toUpperCase()),
        authLevel: String(t.authLevel ?? 'function').toLowerCase(),
        reg,
      });
    }
    this.timers = new TimerRunner(
      registrations,
      this.clock,
      o.logger,
      (name, timer) => this.invoke(name, timer),
      (v) => this.setting(v),
    );
  }

  private setting(value: string): string {
    return value.replace(/%(\w+)%/g, (_, name: string) => {
      const v = this.o.env[name];
      if (v === undefined) throw new Error(`app setting ${name} (used as %${name}%) is not set`);
      return v;
    });
  }

  get functions(): Array<{ name: string; trigger: string; route?: string; authLevel?: string }> {
    return [...registrations].map(([name, reg]) => {
      const t = triggerOf(reg.metadata);
      return {
        name,
        trigger: t.type,
        ...(t.type === 'httpTrigger'
          ? { route: `/api/${String(t.route ?? name)}`, authLevel: String(t.authLevel) }
          : {}),
      };
    });
  }

  /** The binding data a `durableClient` input receives: our durable HTTP API, with the system key. */
  clientData() {
    const hook = `${this.baseUrl}/runtime/webhooks/durabletask`;
    const q = `taskHub=${this.o.hub}&connection=Storage&code=${this.keys.system}`;
    const instance = `${hook}/instances/INSTANCEID`;
    return {
      taskHubName: this.o.hub,
      creationUrls: {
        createNewInstancePostUri: `${hook}/orchestrators/{functionName}[/{instanceId}]?code=${this.keys.system}`,
        createAndWaitOnNewInstancePostUri: `${hook}/orchestrators/{functionName}[/{instanceId}]?timeout={timeoutInSeconds}&pollingInterval={intervalInSeconds}&code=${this.keys.system}`,
      },
      managementUrls: {
        id: 'INSTANCEID',
        statusQueryGetUri: `${instance}?${q}`,
        sendEventPostUri: `${instance}/raiseEvent/{eventName}?${q}`,
        terminatePostUri: `${instance}/terminate?reason={text}&${q}`,
        rewindPostUri: `${instance}/rewind?reason={text}&${q}`,
        purgeHistoryDeleteUri: `${instance}?${q}`,
        restartPostUri: `${instance}/restart?${q}`,
        suspendPostUri: `${instance}/suspend?reason={text}&${q}`,
        resumePostUri: `${instance}/resume?reason={text}&${q}`,
      },
      baseUrl: hook,
      requiredQueryStringParameters: `code=${this.keys.system}`,
      rpcBaseUrl: `${this.baseUrl}/_rpc/${this.keys.system}/durabletask/`,
    };
  }

  private context(name: string, reg: Registration): InvocationContext {
    const trigger = triggerOf(reg.metadata);
    const extraInputs = Object.entries(reg.metadata.bindings)
      .filter(([, b]) => b.direction === 'in' && !/trigger$/i.test(b.type))
      .map(([n, b]) => ({ ...b, name: n, type: b.type }));
    const context = new InvocationContext({
      invocationId: randomUUID(),
      functionName: name,
      logHandler: (level, ...args) =>
        this.o.logger.log(
          level === 'error' ? 'error' : level === 'warning' ? 'warn' : 'info',
          `${name}: ${args.map(String).join(' ')}`,
        ),
      options: {
        trigger: { ...trigger, type: trigger.type, name: trigger.name },
        extraInputs,
        extraOutputs: [],
      },
    });
    for (const input of extraInputs)
      if (input.type === 'durableClient' || input.type === 'orchestrationClient')
        context.extraInputs.set(input.name, this.clientData());
    return context;
  }

  /** Invokes any function by name with a trigger payload (timers, and the admin route). */
  async invoke(name: string, payload: unknown): Promise<unknown> {
    const reg = registrations.get(name);
    if (!reg) throw new DurableHttpError(404, `no function named "${name}"`);
    return reg.handler(payload, this.context(name, reg));
  }

  async listen(): Promise<void> {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((err: Error) => {
        this.o.logger.log('error', 'host request failed', { reason: err.message });
        refuse(
          res,
          err instanceof DurableHttpError
            ? problem(err.status, err.code, err.message)
            : problem(500, 'unexpected', 'internal error in the function host; its log has the reason'),
        );
      });
    });
    await new Promise<void>((resolve, reject) => {
      this.server?.once('error', reject);
      this.server?.listen(this.o.port, '127.0.0.1', resolve);
    });
    const { port } = this.server.address() as AddressInfo;
    this.baseUrl = `http://127.0.0.1:${port}`;
    // durable-functions rewrites management URLs to localhost:7071 unless it sees a host name.
    process.env.WEBSITE_HOSTNAME = `127.0.0.1:${port}`;
    await this.engine.resume();
    this.timers.start();
  }

  async close(): Promise<void> {
    this.timers.stop();
    await this.engine.stop();
    await new Promise<void>((resolve) => {
      if (!this.server) return resolve();
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  /**
   * As the Functions host reads it: the `x-functions-key` header takes precedence over `?code=`. The app scopes
   * idempotency by the same key (shared/exports/request.ts), so both must read it in this order.
   */
  private keyOf(req: IncomingMessage, url: URL): string | null {
    return (req.headers['x-functions-key'] as string | undefined) ?? url.searchParams.get('code') ?? null;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.baseUrl);
    const path = url.pathname;
    if (path.startsWith('/api/')) return this.http(req, res, url);
    const rpc = /^\/_rpc\/([^/]+)\/durabletask(\/.*)$/.exec(path);
    if (rpc) {
      if (!sameKey(rpc[1], this.keys.system))
        return refuse(res, problem(401, 'unauthorized', 'the durable task API needs the system key'));
      return this.durable.handle(req, res, url, rpc[2]);
    }
    if (path.startsWith('/runtime/webhooks/durabletask/')) {
      const key = this.keyOf(req, url);
      if (!sameKey(key, this.keys.system) && !sameKey(key, this.keys.master))
        return refuse(res, problem(401, 'unauthorized', 'the durable task API needs the system key'));
      return this.durable.handle(req, res, url, path.slice('/runtime/webhooks/durabletask'.length));
    }
    if (path.startsWith('/admin/')) {
      if (!sameKey(this.keyOf(req, url), this.keys.master))
        return refuse(res, problem(401, 'unauthorized', 'admin routes need the master key'));
      return this.admin(req, res, url);
    }
    if (path === '/' || path === '')
      return reply(res, 200, { host: 'tenant-integrations local host', functions: this.functions });
    return refuse(res, problem(404, 'not_found', `no route ${path}`));
  }

  private async http(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const sub = url.pathname.slice('/api'.length);
    const matches = this.httpRoutes.map((r) => ({ r, m: r.pattern.exec(sub) })).filter((x) => x.m);
    if (!matches.length) return refuse(res, problem(404, 'not_found', `no function at ${url.pathname}`));
    const method = (req.method ?? 'GET').toUpperCase();
    const hit = matches.find((x) => x.r.methods.includes(method));
    if (!hit)
      return refuse(
        res,
        problem(
          405,
          'method_not_allowed',
          `use ${[...new Set(matches.flatMap((x) => x.r.methods))].join(' or ')}`,
        ),
      );
    const { r, m } = hit as { r: HttpRoute; m: RegExpExecArray };
    const key = this.keyOf(req, url);
    const authorised =
      r.authLevel === 'anonymous' ||
      sameKey(key, this.keys.master) ||
      (r.authLevel === 'function' && sameKey(key, this.keys.function));
    if (!authorised) return reply(res, 401, undefined);
    let body: Buffer;
    try {
      body = await readBody(req);
    } catch (err) {
      if (err instanceof DurableHttpError && err.status === 413)
        return refuse(res, problem(413, 'payload_too_large', `the body may be at most ${BODY_LIMIT} bytes`));
      throw err;
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers))
      if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
    const params: Record<string, string> = {};
    try {
      for (const [k, v] of Object.entries(m.groups ?? {}))
        if (v !== undefined) params[k] = decodeURIComponent(v);
    } catch {
      // A malformed percent-encoding in the path is the caller's mistake, as the Functions host says.
      return refuse(res, problem(400, 'invalid_request', 'the URL path has a malformed %-encoding'));
    }
    const request = new HttpRequest({
      method,
      url: url.href,
      headers,
      query: Object.fromEntries(url.searchParams),
      params,
      body: body.length ? { bytes: body } : undefined,
    });
    let result: unknown;
    try {
      result = await r.reg.handler(request, this.context(r.name, r.reg));
    } catch (err) {
      // Like the real host: the caller gets a bare 500, the log gets the message.
      this.o.logger.log('error', 'function threw', { reason: `${r.name}: ${(err as Error).message}` });
      return reply(res, 500, undefined);
    }
    const response =
      result instanceof HttpResponse
        ? result
        : new HttpResponse((result ?? {}) as ConstructorParameters<typeof HttpResponse>[0]);
    const out: Record<string, string | string[]> = {};
    response.headers.forEach((v, k) => (out[k] = v));
    const cookies = response.cookies.map(
      (c) =>
        `${c.name}=${c.value}${c.path ? `; Path=${c.path}` : ''}${c.httpOnly ? '; HttpOnly' : ''}${c.secure ? '; Secure' : ''}${c.sameSite ? `; SameSite=${c.sameSite}` : ''}${c.maxAge !== undefined ? `; Max-Age=${c.maxAge}` : ''}`,
    );
    if (cookies.length) out['set-cookie'] = cookies;
    const bytes = Buffer.from(await response.arrayBuffer());
    res.writeHead(response.status ?? 200, out);
    res.end(bytes);
  }

  private async admin(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const path = url.pathname;
    if (path === '/admin/host/status') {
      return reply(res, 200, {
        state: 'Running',
        now: new Date(this.clock.now()).toISOString(),
        functions: this.functions,
        timers: [...this.timers.jobs.values()].map(({ name, next, runs, skipped, running }) => ({
          name,
          next: new Date(next).toISOString(),
          runs,
          skipped,
          running,
        })),
      });
    }
    if (path === '/admin/host/clock' && req.method === 'POST') {
      let seconds: unknown;
      try {
        seconds = (JSON.parse((await readBody(req)).toString('utf8') || '{}') as { advanceSeconds?: unknown })
          .advanceSeconds;
      } catch {
        return refuse(res, problem(400, 'invalid_request', 'the body must be JSON {"advanceSeconds": N}'));
      }
      if (typeof seconds !== 'number' || !Number.isInteger(seconds) || seconds < 0)
        return refuse(res, problem(400, 'invalid_request', 'advanceSeconds must be a whole number ≥ 0'));
      this.clock.advanceSeconds(seconds);
      await this.engine.clockMoved(this.clock.offset);
      return reply(res, 200, { now: new Date(this.clock.now()).toISOString() });
    }
    if (path === '/admin/host/faults' && req.method === 'POST') return this.durable.setFaults(req, res);
    const m = /^\/admin\/functions\/([^/]+)$/.exec(path);
    if (m && req.method === 'POST') {
      const name = decodeURIComponent(m[1]);
      const job = this.timers.jobs.get(name);
      if (job) {
        const ran = await this.timers.fire(job, false);
        return ran
          ? reply(res, 202, undefined)
          : refuse(res, problem(409, 'timer_running', 'a run of this timer is still going'));
      }
      await this.invoke(name, (await readBody(req)).toString('utf8'));
      return reply(res, 202, undefined);
    }
    return refuse(res, problem(404, 'not_found', `no admin route ${path}`));
  }
}
