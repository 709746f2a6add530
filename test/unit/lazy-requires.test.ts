import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { LAZY_REQUIRED_MODULES, LAZY_REQUIRES, lazyRequires } from '../../tools/lazy-requires';

/*
 * The bundle's one reach into a dependency's internals (tools/lazy-requires.ts): the real durable-functions files
 * are rewritten so axios and validator load on first use; a version whose files no longer hold the lines must
 * fail the build, not ship a bundle that loads them at every cold start again (or not at all).
 */
const root = join(__dirname, '..', '..');
const DURABLE_CLIENT = join(root, 'node_modules/durable-functions/lib/src/durableClient');

async function bundle(entry: string) {
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    write: false,
    external: ['@azure/functions-core', ...LAZY_REQUIRED_MODULES],
    plugins: [lazyRequires()],
    logLevel: 'silent',
  });
  return result.outputFiles[0].text;
}

describe('lazy requires in the bundle', () => {
  it('the installed durable-functions holds every line rewritten', () => {
    for (const rule of LAZY_REQUIRES) {
      const file = rule.file.test(join(DURABLE_CLIENT, 'DurableClient.js'))
        ? 'DurableClient.js'
        : 'getClient.js';
      expect(readFileSync(join(DURABLE_CLIENT, file), 'utf8')).toContain(rule.from);
    }
  });

  it('loading the durable client requires neither axios nor validator; a client, made, works with both', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ti-lazy-'));
    try {
      const entry = join(dir, 'entry.js');
      writeFileSync(
        entry,
        `require(${JSON.stringify(join(DURABLE_CLIENT, 'getClient.js'))});
         module.exports = require(${JSON.stringify(join(DURABLE_CLIENT, 'DurableClient.js'))});`,
      );
      // Evaluated with the project's require (where axios and validator resolve, as in the package's node_modules),
      // noting what is asked for.
      const asked: string[] = [];
      const projectRequire = createRequire(join(root, 'package.json'));
      const recording = (id: string) => (asked.push(id), projectRequire(id)) as unknown;
      const mod = { exports: {} as { DurableClient: new (data: unknown) => Record<string, unknown> } };
      new Function('require', 'module', 'exports', await bundle(entry))(recording, mod, mod.exports);
      expect(asked.filter((id) => LAZY_REQUIRED_MODULES.includes(id))).toEqual([]);

      const webhooks = 'http://127.0.0.1:7071/runtime/webhooks/durabletask';
      const client = new mod.exports.DurableClient({
        taskHubName: 'hub',
        creationUrls: { createNewInstancePostUri: `${webhooks}/orchestrators/{functionName}` },
        managementUrls: { id: 'INSTANCEID', statusQueryGetUri: `${webhooks}/instances/INSTANCEID` },
        baseUrl: webhooks,
        requiredQueryStringParameters: '',
        rpcBaseUrl: `${webhooks}/`,
        httpBaseUrl: '',
      }) as { uniqueWebhookOrigins: string[]; axiosInstance: { defaults: { maxContentLength: number } } };
      // The constructor checks every webhook URL with isURL and creates its axios instance.
      expect(client.uniqueWebhookOrigins).toEqual(['http://127.0.0.1:7071']);
      expect(client.axiosInstance.defaults.maxContentLength).toBe(Infinity);
      expect([...new Set(asked.filter((id) => LAZY_REQUIRED_MODULES.includes(id)))].sort()).toEqual([
        'axios',
        'validator',
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('fails the build when a dependency no longer has a line it rewrites', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ti-lazy-'));
    try {
      const client = join(dir, 'node_modules/durable-functions/lib/src/durableClient');
      mkdirSync(client, { recursive: true });
      writeFileSync(join(client, 'DurableClient.js'), 'const axios_1 = require("axios").default;\n');
      await expect(bundle(join(client, 'DurableClient.js'))).rejects.toThrow(
        /is no longer in .*DurableClient\.js/,
      );
      // A build that never meets the files is refused too: the rewrite would silently not apply.
      writeFileSync(join(dir, 'other.js'), 'module.exports = 1;\n');
      await expect(bundle(join(dir, 'other.js'))).rejects.toThrow(/no bundled file matched/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
