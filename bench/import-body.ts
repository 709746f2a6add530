import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startAzurite } from '../cli/azurite';
import { maxBodyBytes } from '../shared/imports/request';
import { startSandboxProcess } from './sync';

/**
 * `bench -- import-body`: hostile bodies POSTed to /api/imports on the local host, as a caller with a function key
 * would send them — each refused with a 400 — timed from the first byte sent to the answer, and the host's peak RSS
 * while it refused them. Beside them, in the same run, the floor: a plain node:http server in a process of its own
 * that reads the same body to its end and answers 400 without looking at it. Goals (issue 55): ≤ 100 ms and
 * ≤ 50 MB of growth in the host's RSS for an 8 MiB body; `ratio` is the worst body's time over the floor's.
 */
const DIST = resolve(__dirname, '..');
const ROUNDS = 9;

/** Bodies of just under the limit for 1 000 items (IMPORTS_MAX_ITEMS × 8 KiB + 64 KiB), each hostile another way. */
function bodies(): Record<string, string> {
  const target = maxBodyBytes(1000) - 200;
  const vars: string[] = [];
  for (let i = 0, size = 0; size < target - 64; i++) {
    const v = `"v${i}":0`;
    vars.push(v);
    size += v.length + 1;
  }
  const oneItem = `{"operation":"updateKpi","items":[{"key":"k","variables":{${vars.join(',')}}}]}`;
  // 1 000 items of 8 000 bytes, each with undeclared variables: every item within its size, every one wrong.
  const perItem = Array.from({ length: 120 }, (_, i) => `"x${i}":"${'y'.repeat(50)}"`).join(',');
  const manyItems = `{"operation":"updateKpi","items":[${Array.from(
    { length: 1000 },
    (_, i) => `{"key":"k${i}","variables":{${perItem}}}`,
  ).join(',')}]}`;
  const half = Math.floor(target / 2) - 64;
  const deep = `{"operation":"updateKpi","items":[{"key":"k","variables":{"id":${'['.repeat(half)}${']'.repeat(half)}}}]}`;
  const longString = `{"operation":"updateKpi","items":[{"key":"k","variables":{"id":"${'z'.repeat(target - 100)}"}}]}`;
  // The same half-million variables behind a key the scan must read as JSON.parse does: `items` escaped, or a
  // harmless `items` first and the hostile one after it (JSON.parse keeps the last).
  const escapedKey = oneItem.replace('"items":', '"it\\u0065ms":');
  const repeatedKey = `{"operation":"updateKpi","items":[],${oneItem.slice(1 + '"operation":"updateKpi",'.length)}`;
  return {
    oneItemOfUndeclaredVariables: oneItem,
    manyItemsAllWrong: manyItems,
    deepNesting: deep,
    longString,
    escapedItemsKey: escapedKey,
    repeatedItemsKey: repeatedKey,
  };
}

const agent = new Agent({ keepAlive: true, maxSockets: 1 });

/** POSTs `body`; the milliseconds to the whole answer, and its status. */
function post(
  url: string,
  body: string,
  headers: Record<string, string>,
): Promise<{ ms: number; status: number }> {
  return new Promise((done, fail) => {
    const started = process.hrtime.bigint();
    const req = request(
      url,
      {
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          ...headers,
        },
      },
      (res) => {
        res.resume();
        res.on('end', () =>
          done({ ms: Number(process.hrtime.bigint() - started) / 1e6, status: res.statusCode ?? 0 }),
        );
      },
    );
    req.on('error', fail);
    req.end(body);
  });
}

/** A process's resident set now and at its peak since the last reset, in MB (Linux /proc). */
const rss = (pid: number) => {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
  return { nowMb: kb('VmRSS') / 1024, peakMb: kb('VmHWM') / 1024 };
};
/** Resets the peak (VmHWM) to the current RSS: `5` to clear_refs (Linux ≥ 4.0). */
const resetPeak = (pid: number) => writeFileSync(`/proc/${pid}/clear_refs`, '5');

function startProcess(args: string[], env: Record<string, string>) {
  const child = spawn(process.execPath, args, {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const line = new Promise<Record<string, string>>((ok, fail) => {
    let buf = '';
    child.stdout.on('data', (d) => {
      buf += d;
      if (buf.includes('\n')) ok(JSON.parse(buf.slice(0, buf.indexOf('\n'))) as Record<string, string>);
    });
    child.once('exit', (code) => fail(new Error(`exited with ${code}: ${stderr}`)));
  });
  return { child, line, stop: () => child.kill('SIGTERM') };
}

const PLAIN_SERVER = `
  const server = require('node:http').createServer((req, res) => {
    req.on('data', () => undefined);
    req.on('end', () => {
      res.writeHead(400, { 'content-type': 'application/problem+json' });
      res.end('{"code":"invalid_request"}');
    });
  });
  server.keepAliveTimeout = 30000;
  server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ url: 'http://127.0.0.1:' + server.address().port + '/api/imports' }) + '\\n'));`;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round = (n: number, d = 1) => Math.round(n * 10 ** d) / 10 ** d;

export async function importBodyBench(): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), 'ti-import-body-'));
  const [azurite, sandbox] = await Promise.all([startAzurite(), startSandboxProcess(10)]);
  const secrets = join(dir, 'secrets.json');
  writeFileSync(secrets, JSON.stringify({ 'tenant-client-secret': sandbox.info.clientSecret }), {
    mode: 0o600,
  });
  const functionKey = 'function-key-for-the-import-body-bench';
  const host = startProcess([join(DIST, 'devhost', 'main.js'), '--port', '0'], {
    AzureWebJobsStorage: azurite.connectionString,
    AZURE_FUNCTIONS_ENVIRONMENT: 'Development',
    TENANT_NAME: sandbox.info.tenant,
    TENANT_BASE_URL: sandbox.info.baseUrl,
    TENANT_AUTH_URL: sandbox.info.authUrl,
    TENANT_CLIENT_ID: sandbox.info.clientId,
    LOCAL_SECRETS_FILE: secrets,
    SYNC_SCHEDULE: '0 0 0 1 1 *',
    HOST_FUNCTION_KEY: functionKey,
  });
  const floor = startProcess(['-e', PLAIN_SERVER], {});
  try {
    const [hostLine, floorLine] = await Promise.all([host.line, floor.line]);
    const hostUrl = `${hostLine.apiBaseUrl}/imports`;
    const pid = host.child.pid as number;
    const all = bodies();
    const results: Record<string, { ms: number; floorMs: number; rssGrowthMb: number; bytes: number }> = {};
    for (const [name, body] of Object.entries(all)) {
      const ms: number[] = [];
      const floorMs: number[] = [];
      const growth: number[] = [];
      for (let r = 0; r < ROUNDS + 2; r++) {
        // Interleaved: the floor and the host see the same machine.
        const f = await post(floorLine.url, body, {});
        resetPeak(pid);
        const before = rss(pid).nowMb;
        const answer = await post(hostUrl, body, { 'x-functions-key': functionKey });
        if (answer.status !== 400) throw new Error(`${name}: the host answered ${answer.status}, not 400`);
        const after = rss(pid).peakMb;
        if (r < 2) continue; // warm-ups
        ms.push(answer.ms);
        floorMs.push(f.ms);
        growth.push(after - before);
      }
      results[name] = {
        bytes: Buffer.byteLength(body),
        ms: round(median(ms)),
        floorMs: round(median(floorMs)),
        rssGrowthMb: round(median(growth)),
      };
    }
    const worst = Object.values(results).reduce((a, b) => (b.ms > a.ms ? b : a));
    const worstGrowth = Math.max(...Object.values(results).map((r) => r.rssGrowthMb));
    return {
      bench: 'import-body',
      rounds: ROUNDS,
      bodies: results,
      worstMs: worst.ms,
      worstRssGrowthMb: worstGrowth,
      ratio: round(worst.ms / worst.floorMs, 2),
      goals: { ms: 100, rssGrowthMb: 50 },
      met: worst.ms <= 100 && worstGrowth <= 50,
    };
  } finally {
    host.stop();
    floor.stop();
    sandbox.stop();
    await azurite.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
