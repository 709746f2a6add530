import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalFileSecretStore } from '../../shared/secrets';
import { runCli } from '../helpers/cli';
import { sandboxFixture, type SandboxFixture } from '../helpers/sandbox';

/** `tenant-integrations doctor` against a real sandbox, configured as a real tenant would be. */
jest.setTimeout(60_000);

let sb: SandboxFixture;
let dir: string;
let env: Record<string, string>;
beforeAll(async () => {
  sb = await sandboxFixture({ records: 20 });
  dir = mkdtempSync(join(tmpdir(), 'ti-doctor-'));
  const secretsFile = join(dir, 'secrets.json');
  env = {
    ...sb.settings,
    LOCAL_SECRETS_FILE: secretsFile,
    SYNC_SINKS: `dir:${join(dir, 'out')}`,
    AzureWebJobsStorage: '',
  };
});
afterAll(async () => {
  await sb.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Report {
  ok: boolean;
  checks: Array<{ name: string; state: string; found: string; action?: string }>;
}
const doctor = async (args: string[] = ['--json']) => {
  const r = await runCli(['doctor', ...args], { env, cwd: dir });
  return { ...r, report: args.includes('--json') ? (JSON.parse(r.stdout) as Report) : undefined };
};
const check = (report: Report | undefined, name: string) => report?.checks.find((c) => c.name === name);

describe('tenant-integrations doctor', () => {
  it('a missing client secret fails the secret check with the command that sets it, and skips what needs it', async () => {
    const { code, report } = await doctor();
    expect(code).toBe(1);
    expect(check(report, 'secret store')).toMatchObject({
      state: 'fail',
      action: expect.stringContaining('tenant-integrations secrets set tenant-client-secret'),
    });
    expect(check(report, 'client credentials')?.state).toBe('warn');
  });

  it('a healthy sandbox: exit 0, every check ok (storage warns: none is configured), no secret printed', async () => {
    await new LocalFileSecretStore(env.LOCAL_SECRETS_FILE).set('tenant-client-secret', sb.clientSecret);
    const { code, report, stdout } = await doctor();
    expect(code).toBe(0);
    expect(Object.fromEntries(report?.checks.map((c) => [c.name, c.state]) ?? [])).toEqual({
      configuration: 'ok',
      'secret store': 'ok',
      'identity provider': 'ok',
      'client credentials': 'ok',
      GraphQL: 'ok',
      'read-only credential': 'ok',
      storage: 'warn',
      'delegated session': 'ok',
      'import operations': 'warn', // they fit the schema; no admin is signed in to run them
      catalog: 'ok',
      'sink dir': 'ok',
    });
    // No catalog is stored yet: doctor says what the first run will discover.
    expect(report?.checks.find((c) => c.name === 'catalog')?.found).toMatch(
      /first run discovers 6 streams \(controls, evidence, personnel, kpis, reports, users\)/,
    );
    expect(stdout).not.toContain(sb.clientSecret);
    const human = await doctor([]);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/✔ client credentials: credential \S+ accepted/);
  });

  it('after the credential is revoked: exit 1, the credential check names the API Credentials page', async () => {
    await sb.hook(`credentials/${sb.clientId}/revoke`);
    const { code, report, stdout } = await doctor();
    expect(code).toBe(1);
    expect(check(report, 'client credentials')).toMatchObject({
      state: 'fail',
      found: expect.stringMatching(/invalid_client|unauthorized_client/),
      action: expect.stringContaining('API Credentials'),
    });
    expect(check(report, 'GraphQL')?.state).toBe('warn');
    expect(stdout).not.toContain(sb.clientSecret);
  });

  it('with no tenant and no running stack (an embedded sandbox): no session looked for, the way to one named; exit 0', async () => {
    const own = mkdtempSync(join(tmpdir(), 'ti-doctor-embedded-'));
    try {
      // The session of an earlier command's embedded sandbox, lost with it: it used to fail doctor, pointing at
      // `login` — which signs in to yet another sandbox that ends with it.
      mkdirSync(join(own, '.local'));
      writeFileSync(
        join(own, '.local', 'sessions.json'),
        JSON.stringify({
          acme: {
            username: 'admin',
            connectedAt: '2026-01-01T00:00:00.000Z',
            lastRefreshAt: '2026-01-01T00:00:00.000Z',
            refreshExpiresAt: '2026-01-01T00:30:00.000Z',
            state: 'login-required',
            reason: 'refresh refused: invalid_grant',
          },
        }),
      );
      const noTenant = { TENANT_NAME: '', TENANT_BASE_URL: '', TENANT_AUTH_URL: '', TENANT_CLIENT_ID: '' };
      const r = await runCli(['doctor', '--json'], { env: { ...noTenant, SYNC_SINKS: '' }, cwd: own });
      expect([r.code, r.stderr]).toEqual([0, '']);
      const report = JSON.parse(r.stdout) as Report;
      for (const name of ['delegated session', 'import operations'])
        expect(check(report, name)).toMatchObject({
          state: 'warn',
          action: expect.stringContaining('Run `npm start`, then `tenant-integrations login`'),
        });
      expect(check(report, 'client credentials')?.state).toBe('ok');
    } finally {
      rmSync(own, { recursive: true, force: true });
    }
  });

  it('bad configuration is one failed check naming the setting, exit 1', async () => {
    const r = await runCli(['doctor', '--json'], {
      env: { ...env, TENANT_BASE_URL: 'http://example.com' },
      cwd: dir,
    });
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout) as Report;
    expect(report.checks).toEqual([
      expect.objectContaining({
        name: 'configuration',
        state: 'fail',
        found: expect.stringContaining('TENANT_BASE_URL'),
      }),
    ]);
  });

  it('a malformed AzureWebJobsStorage is named (it crashed doctor with a TypeError)', async () => {
    for (const value of ['DefaultEndpointsProtocol=https;AccountName=x', 'not a connection string']) {
      const r = await runCli(['doctor', '--json'], { env: { ...env, AzureWebJobsStorage: value }, cwd: dir });
      expect([r.code, r.stderr]).toEqual([1, '']);
      const report = JSON.parse(r.stdout) as Report;
      expect(report.checks).toEqual([
        expect.objectContaining({
          name: 'configuration',
          state: 'fail',
          found: expect.stringMatching(/AzureWebJobsStorage: not a storage connection string/),
        }),
      ]);
      expect(r.stdout).not.toMatch(/TypeError|toLowerCase|\n\s+at /);
    }
  });
});
