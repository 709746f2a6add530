import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAccessLayer } from '../shared/access';
import { resolveStreams } from '../sandbox/streams';
import { syncAll } from '../shared/sync/run-steps';
import { changeJson, type Change } from '../shared/changes';
import { BlobSink, DirectorySink, type ChangeSink } from '../shared/sinks';
import { BlobSyncStateStore } from '../shared/sync/blob-state';
import { FileSyncStateStore } from '../shared/sync/file-state';
import { applyAppHeapFlags } from '../shared/node-flags';
import { sandboxConfig } from './sandbox-config';
import type { StreamDefinition } from '../shared/streams';
import { getPath } from '../shared/streams/paths';

/**
 * One measurement in a fresh process (so its peak RSS is its own): `raw` — a plain paged loop over kept-alive
 * node:http, the fastest plain client —
 * or `sync` — our whole sync of the same stream with state and checkpoints on disk. Prints one JSON line.
 */
interface Args {
  mode: 'raw' | 'sync';
  baseUrl: string;
  authUrl: string;
  tenant: string;
  clientId: string;
  clientSecret: string;
  stream: string;
  /** The stream itself (a tenant other than the sandbox: its discovered definition); else the sandbox's, by name. */
  definition?: StreamDefinition;
  /** Sync state kept here between children (a second run reads the first's snapshot); else a temp folder. */
  stateDir?: string;
  /** `sync --full-pass`: read everything even where an incremental pass would do. */
  fullPass?: boolean;
  /** Where changes go: counted and dropped (default), the dir sink, or the blob sink on this Azurite. */
  sink?: 'counting' | 'dir' | 'blob';
  /** Where the sync state lives: files (the CLI's, by default) or Blob Storage on this Azurite (the app's). */
  state?: 'file' | 'blob';
  blobConnectionString?: string;
  /** As the Functions app starts (shared/app.ts): the heap flags it sets itself. */
  appHeapFlags?: boolean;
}

/** Serialises every change like a sink would, then drops it: downstream's own cost is not ours. */
class CountingSink implements ChangeSink {
  readonly description = 'counting';
  bytes = 0;
  async write(batch: { changes: Change[] }) {
    for (const c of batch.changes) this.bytes += changeJson(c).length + 1;
  }
  async endStream() {}
  async finish() {}
  async close() {}
  async erase() {
    return { erased: [] };
  }
  names() {
    return [];
  }
  readonly ownNames = [];
}

async function main() {
  const a = JSON.parse(process.argv[2]) as Args;
  if (a.appHeapFlags) applyAppHeapFlags(process.execArgv, process.env.NODE_OPTIONS);
  const [stream] = a.definition ? [a.definition] : resolveStreams({ select: [a.stream] });
  if (stream.pagination !== 'cursor') throw new Error('the raw reader pages by cursor');
  const dir = mkdtempSync(join(tmpdir(), 'ti-bench-sync-'));
  const started = process.hrtime.bigint();
  let records = 0;
  let changes = 0;
  let pass: string | undefined;
  try {
    if (a.mode === 'raw') {
      const tokenRes = await fetch(`${a.authUrl}/realms/${a.tenant}/protocol/openid-connect/token`, {
        method: 'POST',
        body: new URLSearchParams({
          grant_type: 'client_credentials',
          client_id: a.clientId,
          client_secret: a.clientSecret,
        }),
      });
      const { access_token } = (await tokenRes.json()) as { access_token: string };
      let after: string | null = null;
      // The fastest plain reader: node:http on one kept-alive connection, each page parsed and counted.
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      const post = (body: string) =>
        new Promise<string>((ok, fail) => {
          const req = request(
            `${a.baseUrl}/graphql`,
            {
              method: 'POST',
              agent,
              headers: {
                authorization: `Bearer ${access_token}`,
                'content-type': 'application/json',
                'content-length': Buffer.byteLength(body),
              },
            },
            (res) => {
              const chunks: Buffer[] = [];
              res.on('data', (c: Buffer) => chunks.push(c));
              res.on('end', () => ok(Buffer.concat(chunks).toString('utf8')));
              res.on('error', fail);
            },
          );
          req.on('error', fail);
          req.end(body);
        });
      for (;;) {
        const text = await post(
          JSON.stringify({
            query: stream.document,
            variables: {
              [stream.paths.pageSizeVariable]: stream.pageSize,
              [stream.paths.cursorVariable]: after,
            },
          }),
        );
        const { data } = JSON.parse(text) as { data: unknown };
        const n = (getPath(data, stream.paths.records) as unknown[]).length;
        records += n;
        // Where the stream asks no hasNextPage (proved at discovery), the list ends at an empty page, as the sync's.
        const more = stream.paths.hasNextPage ? getPath(data, stream.paths.hasNextPage) === true : n > 0;
        if (!more) break;
        after = getPath(data, stream.paths.endCursor) as string;
      }
    } else {
      const access = createAccessLayer(await sandboxConfig(a, dir));
      // The blob SDK loaded only for the blob sink or state, as the app does: it would weigh on every child's peak RSS.
      const blobs =
        a.sink === 'blob' || a.state === 'blob'
          ? (await import('@azure/storage-blob')).BlobServiceClient.fromConnectionString(
              a.blobConnectionString ?? '',
            )
          : undefined;
      const sink =
        a.sink === 'dir'
          ? new DirectorySink(join(dir, 'out'))
          : a.sink === 'blob' && blobs
            ? new BlobSink(blobs)
            : new CountingSink();
      const result = await syncAll(access.graphql, [stream], {
        tenant: a.tenant,
        state:
          a.state === 'blob' && blobs
            ? new BlobSyncStateStore(blobs)
            : new FileSyncStateStore(a.stateDir ?? join(dir, 'state')),
        sink,
        ...(a.fullPass ? { fullPass: true } : {}),
      });
      if (!result.ok) throw new Error(result.streams[0].error);
      records = result.streams[0].counts.read;
      pass = result.streams[0].pass;
      const c = result.streams[0].counts;
      changes = c.created + c.updated + c.deleted;
    }
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    process.stdout.write(
      `${JSON.stringify({ mode: a.mode, pass, records, changes, ms, peakRssMb: process.resourceUsage().maxRSS / 1024, cpuMs: (process.cpuUsage().user + process.cpuUsage().system) / 1000 })}\n`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: Error) => {
  process.stderr.write(`${err.message}\n`);
  process.exit(1);
});
