import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The preprovision hook as built: what azd's environment would get. */
const PROVISION = join(__dirname, '..', '..', 'dist', 'tools', 'provision.js');
const tenant = {
  TENANT_NAME: 'contoso',
  TENANT_BASE_URL: 'https://contoso.example.com',
  TENANT_AUTH_URL: 'https://login.example.com',
  TENANT_CLIENT_ID: 'm2m',
};

describe('provision --print', () => {
  it('--print: every value the hook would set, as one JSON object on stdout, without azd', () => {
    const out = execFileSync(process.execPath, [PROVISION, '--print'], {
      // No azd and no az on the PATH: --print must not need them.
      env: {
        PATH: '/nonexistent',
        ...tenant,
        SYNC_SCHEDULE: '0 0 2 * * *',
        AZURE_RESOURCE_SUFFIX: 'abc123',
        // A setting Bicep has no parameter of its own for: it reaches the app through APP_SETTINGS_BASE64.
        SYNC_SCHEMA_CHANGES: 'propagate',
      },
      encoding: 'utf8',
    });
    const values = JSON.parse(out);
    expect(values).toEqual({
      SYNC_INTERVAL_MINUTES: '1440',
      AZURE_RESOURCE_SUFFIX: 'abc123',
      SYNC_FAILED_WINDOW_MINUTES: '2880',
      NO_SUCCESSFUL_SYNC_WINDOW_MINUTES: '2880',
      NO_SUCCESSFUL_SYNC_ALERT: 'true',
      APP_SETTINGS_BASE64: expect.any(String),
    });
    expect(JSON.parse(Buffer.from(values.APP_SETTINGS_BASE64, 'base64').toString())).toEqual({
      SYNC_SCHEMA_CHANGES: 'propagate',
    });
    expect(out.trim().split('\n')).toHaveLength(1);
  });

  it('a passed-through setting is checked as the app would: a bad one stops the hook, named', () => {
    let stderr = '';
    try {
      execFileSync(process.execPath, [PROVISION, '--print'], {
        env: { PATH: '/nonexistent', ...tenant, SYNC_SCHEMA_CHANGES: 'sometimes' },
        encoding: 'utf8',
        stdio: 'pipe',
      });
    } catch (err) {
      stderr = String((err as { stderr: string }).stderr);
    }
    expect(stderr).toMatch(/SYNC_SCHEMA_CHANGES/);
  });
});

describe('provision --import-variables', () => {
  // azd cannot be installed here (its releases come from GitHub, not a package registry): a stand-in on the PATH
  // records each `azd env set NAME VALUE` the hook runs, as azd would store them.
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'ti-azd-'));
    writeFileSync(
      join(dir, 'azd'),
      `#!/bin/sh\nnode -e 'require("fs").appendFileSync(process.argv[1], JSON.stringify(process.argv.slice(2)) + "\\n")' "${join(dir, 'calls')}" "$@"\n`,
    );
    chmodSync(join(dir, 'azd'), 0o755);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('sets every variable a deployment reads, and no other, from the workflow’s toJSON(vars)', () => {
    const vars = {
      ...tenant,
      DURABLE_BACKEND: 'scheduler',
      POSTGRES_SCHEMA: 'tenant_contoso',
      AZURE_RESOURCE_SUFFIX: 'abc123',
      // Not read by any deployment: left alone. Derived by the hook itself: never taken from a variable.
      SOMETHING_ELSE: 'x',
      SYNC_INTERVAL_MINUTES: '1',
      // Empty is unset.
      SYNC_STREAMS: '',
    };
    const { stderr, status } = spawnSync(process.execPath, [PROVISION, '--import-variables'], {
      env: { PATH: `${dir}:${process.env.PATH}`, REPOSITORY_VARIABLES: JSON.stringify(vars) },
      encoding: 'utf8',
    });
    expect(status).toBe(0);
    const calls = readFileSync(join(dir, 'calls'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as string[]);
    expect(Object.fromEntries(calls.map((c) => [c[2], c[3]]))).toEqual({
      ...tenant,
      DURABLE_BACKEND: 'scheduler',
      POSTGRES_SCHEMA: 'tenant_contoso',
      AZURE_RESOURCE_SUFFIX: 'abc123',
    });
    for (const c of calls) expect(c.slice(0, 2)).toEqual(['env', 'set']);
    // The log names what was set, never a value.
    expect(stderr).toContain('TENANT_BASE_URL');
    expect(stderr).not.toContain('contoso.example.com');
  });
});
