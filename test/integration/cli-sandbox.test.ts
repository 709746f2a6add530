import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, startCli } from '../helpers/cli';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ti-cli-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

describe('tenant-integrations sandbox', () => {
  it('prints the ready line of docs/sandbox.md and stores the demo secret in a 0600 secret file', async () => {
    const secretFile = join(dir, 'secrets.json');
    const cli = startCli(['sandbox', '--records', '20', '--tenant', 'contoso', '--seed', 'cli'], {
      cwd: dir,
      env: { LOCAL_SECRETS_FILE: secretFile },
    });
    try {
      const line = JSON.parse(await cli.firstLine);
      expect(line).toMatchObject({ tenant: 'contoso', adminUsername: 'admin', clientId: 'demo-sync' });
      expect(line.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(line.authUrl).toBe(`${line.baseUrl}/auth`);
      expect((await stat(secretFile)).mode & 0o777).toBe(0o600);
      expect(JSON.parse(await readFile(secretFile, 'utf8'))['tenant-client-secret']).toBe(line.clientSecret);
      const token = await fetch(`${line.authUrl}/realms/contoso/protocol/openid-connect/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'client_credentials',
          client_id: line.clientId,
          client_secret: line.clientSecret,
        }),
      });
      expect(token.status).toBe(200);
    } finally {
      expect(await cli.stop()).toBe(0);
    }
  });

  it('bad options exit 2 with a message, not a stack trace', async () => {
    const res = await runCli(['sandbox', '--records', 'lots'], { cwd: dir });
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('--records must be a whole number');
    expect(res.stderr).not.toMatch(/\n\s+at /);
    const unknown = await runCli(['sandbox', '--colour'], { cwd: dir });
    expect(unknown.code).toBe(2);
  });

  it('a port in use is a clear message', async () => {
    const first = startCli(['sandbox', '--records', '1'], {
      cwd: dir,
      env: { LOCAL_SECRETS_FILE: join(dir, 's.json') },
    });
    try {
      const port = new URL(JSON.parse(await first.firstLine).baseUrl).port;
      const second = await runCli(['sandbox', '--port', port], {
        cwd: dir,
        env: { LOCAL_SECRETS_FILE: join(dir, 's2.json') },
      });
      expect(second.code).toBe(2);
      expect(second.stderr).toContain(`port ${port} is in use`);
    } finally {
      await first.stop();
    }
  });
});

describe('tenant-integrations secrets set', () => {
  it('stores stdin in the local secret file (mode 0600) without echoing it', async () => {
    const secretFile = join(dir, 'nested', 'secrets.json');
    const res = await runCli(['secrets', 'set', 'downstream-webhook-secret'], {
      cwd: dir,
      input: 's3cr3t-value\n',
      env: { LOCAL_SECRETS_FILE: secretFile, KEY_VAULT_URL: '' },
    });
    expect(res.code).toBe(0);
    expect(res.stdout + res.stderr).not.toContain('s3cr3t-value');
    expect(JSON.parse(await readFile(secretFile, 'utf8'))).toEqual({
      'downstream-webhook-secret': 's3cr3t-value',
    });
    expect((await stat(secretFile)).mode & 0o777).toBe(0o600);
  });

  it('refuses an empty value, a bad name and invalid configuration', async () => {
    const env = { LOCAL_SECRETS_FILE: join(dir, 's.json') };
    expect((await runCli(['secrets', 'set', 'x'], { cwd: dir, env, input: '' })).code).toBe(2);
    expect((await runCli(['secrets', 'set', 'bad_name!'], { cwd: dir, env, input: 'v' })).code).toBe(2);
    const badConfig = await runCli(['secrets', 'set', 'x'], {
      cwd: dir,
      env: { ...env, KEY_VAULT_URL: 'http://vault' },
      input: 'v',
    });
    expect(badConfig.code).toBe(2);
    expect(badConfig.stderr).toContain('KEY_VAULT_URL');
  });

  it('an unknown command exits 2 with usage', async () => {
    const res = await runCli(['frobnicate'], { cwd: dir });
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('usage: tenant-integrations');
  });
});
