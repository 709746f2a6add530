import type { IncomingMessage, ServerResponse } from 'node:http';
import { problem } from '../../shared/errors';
import { readBody, refuse, reply } from '../reply';
import type { DurableEngine } from './engine';

/**
 * The durable client's HTTP API as the Functions host serves it (`/runtime/webhooks/durabletask/...`): start, raise an
 * event, terminate, read, list and purge instances — with faults a test may set (`POST /admin/host/faults`).
 */
export class DurableApi {
  /**
   * The next starts made and their answer lost (the connection dropped after the instance exists), the next status
   * reads dropped before they are answered.
   */
  private readonly faults = { loseStartAnswers: 0, dropStatusReads: 0 };

  constructor(
    private readonly engine: DurableEngine,
    /** The management URLs with INSTANCEID where an instance's id goes (the client binding's data). */
    private readonly managementUrls: () => Record<string, string>,
  ) {}

  /** `POST /admin/host/faults {loseStartAnswers?, dropStatusReads?}`: each a whole number from 0 to 100. */
  async setFaults(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let asked: Record<string, unknown>;
    try {
      asked = JSON.parse((await readBody(req)).toString('utf8') || '{}') as Record<string, unknown>;
    } catch {
      return refuse(res, problem(400, 'invalid_request', 'the body must be JSON'));
    }
    for (const k of Object.keys(this.faults) as Array<keyof typeof this.faults>) {
      const n = asked[k];
      if (n === undefined) continue;
      if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > 100)
        return refuse(res, problem(400, 'invalid_request', `${k} must be a whole number from 0 to 100`));
      this.faults[k] = n;
    }
    return reply(res, 200, { ...this.faults });
  }

  async handle(req: IncomingMessage, res: ServerResponse, url: URL, sub: string): Promise<void> {
    const method = req.method ?? 'GET';
    const body = (await readBody(req)).toString('utf8');
    let m: RegExpExecArray | null;
    if (method === 'POST' && (m = /^\/orchestrators\/([^/]+)(?:\/([^/]+))?$/.exec(sub))) {
      const id = await this.engine.start(
        decodeURIComponent(m[1]),
        m[2] ? decodeURIComponent(m[2]) : undefined,
        body,
      );
      if (this.faults.loseStartAnswers > 0) {
        this.faults.loseStartAnswers--;
        return void req.socket.destroy(); // made, and its answer lost on the way back
      }
      const payload = this.managementUrls();
      const links = Object.fromEntries(
        Object.entries(payload).map(([k, v]) => [k, v.replace('INSTANCEID', id)]),
      );
      return reply(res, 202, { ...links, id }, { location: links.statusQueryGetUri });
    }
    if ((m = /^\/instances\/([^/]+)\/raiseEvent\/([^/]+)$/.exec(sub)) && method === 'POST') {
      await this.engine.raiseEvent(decodeURIComponent(m[1]), decodeURIComponent(m[2]), body);
      return reply(res, 202, undefined);
    }
    if ((m = /^\/instances\/([^/]+)\/terminate$/.exec(sub)) && method === 'POST') {
      await this.engine.terminate(decodeURIComponent(m[1]), url.searchParams.get('reason') ?? '');
      return reply(res, 202, undefined);
    }
    if ((m = /^\/instances\/([^/]+)$/.exec(sub))) {
      const id = decodeURIComponent(m[1]);
      if (method === 'GET' && this.faults.dropStatusReads > 0) {
        this.faults.dropStatusReads--;
        return void req.socket.destroy();
      }
      if (method === 'DELETE') {
        const deleted = await this.engine.purge(id);
        return reply(res, deleted ? 200 : 404, { instancesDeleted: deleted ? 1 : 0 });
      }
      const status = await this.engine.status(id, url.searchParams.get('showHistory') === 'true');
      if (!status) return refuse(res, problem(404, 'not_found', `no instance "${id}"`));
      const done = ['Completed', 'Failed', 'Terminated'].includes(status.runtimeStatus);
      return reply(res, done ? 200 : 202, status);
    }
    if (/^\/instances\/?$/.test(sub) && method === 'GET') return reply(res, 200, await this.engine.list());
    return refuse(res, problem(404, 'not_found', `durable API: no route ${method} ${sub}`));
  }
}
