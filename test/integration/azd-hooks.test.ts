import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { hostJsonFor } from '../../tools/package';

/*
 * The hooks as azd runs them (azure.yaml), each a process of its own with the azd environment as its environment and
 * a stand-in `azd` first on PATH that records what it is asked: azd itself cannot be installed here, and Azure's
 * control plane cannot exist, so every case gives the values that spare the hook a call to Azure (a suffix, the
 * deployed backend). Built code (dist/), as the hooks' scripts run it.
 */
const root = resolve(__dirname, '../..');
const dir = mkdtempSync(join(tmpdir(), 'ti-azd-'));
const log = join(dir, 'azd.log');
writeFileSync(
  join(dir, 'azd'),
  `#!${process.execPath}\nrequire('fs').appendFileSync(process.env.AZD_LOG, JSON.stringify(process.argv.slice(2)) + '\\n');\n`,
);
chmodSync(join(dir, 'azd'), 0o755);

function hook(script: string, args: string[], env: Record<string, string>) {
  writeFileSync(log, '');
  const r = spawnSync(process.execPath, [join(root, 'dist/tools', script), ...args], {
    // Only what azd would hand over: the environment's values, PATH with the stand-in first.
    env: { PATH: `${dir}${delimiter}${process.env.PATH}`, AZD_LOG: log, HOME: dir, ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  const calls = readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as string[]);
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, calls };
}

const setIn = (calls: string[][]) =>
  Object.fromEntries(calls.filter((c) => c[0] === 'env' && c[1] === 'set').map((c) => [c[2], c[3]]));

const first: Record<string, string> = {
  AZURE_ENV_NAME: 'prod',
  AZURE_RESOURCE_SUFFIX: 'a1b2c3',
  PROVISIONED_DURABLE_BACKEND: 'storage',
  TENANT_NAME: 'contoso',
  TENANT_BASE_URL: 'https://contoso-private.example.com',
  TENANT_AUTH_URL: 'https://login-private.example.com',
  TENANT_CLIENT_ID: 'm2m',
  SYNC_SINKS: 'blob,delta,webhook',
  DOWNSTREAM_WEBHOOK_URL: 'https://receiver-private.example.com/hook',
  ALERT_EMAIL: 'ops-private@example.com',
  DELTA_URL: 'https://lakeprivate.blob.core.windows.net/tables/tenant',
  OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otlp-private.example.com',
  SYNC_SCHEMA_CHANGES: 'propagate',
};
const values = Object.values(first).filter((v) => v.includes('private'));

describe('azd hooks, run as azd runs them', () => {
  let deployedBase64 = '';

  it('preprovision: sets what it derives in the azd environment, and prints names, never a value', () => {
    const r = hook('provision.js', [], first);
    expect([r.code, r.stderr]).toEqual([
      0,
      expect.stringContaining('provision: settings valid; set SYNC_INTERVAL_MINUTES'),
    ]);
    const set = setIn(r.calls);
    expect(Object.keys(set).sort()).toEqual(
      [
        'APP_SETTINGS_BASE64',
        'AZURE_RESOURCE_SUFFIX',
        'NO_SUCCESSFUL_SYNC_ALERT',
        'NO_SUCCESSFUL_SYNC_WINDOW_MINUTES',
        'SYNC_FAILED_WINDOW_MINUTES',
        'SYNC_INTERVAL_MINUTES',
      ].sort(),
    );
    deployedBase64 = set.APP_SETTINGS_BASE64;
    expect(JSON.parse(Buffer.from(deployedBase64, 'base64').toString())).toMatchObject({
      DELTA_URL: first.DELTA_URL,
    });
    // What CI would log: no setting's value, not even base64-encoded.
    for (const secretish of [...values, deployedBase64]) expect(r.stderr + r.stdout).not.toContain(secretish);
  });

  it('preprovision on a second machine (after `azd env refresh`): the passed-through settings are set again, by name', () => {
    const refreshed: Record<string, string> = {
      AZURE_ENV_NAME: 'prod',
      AZURE_RESOURCE_SUFFIX: 'a1b2c3',
      PROVISIONED_DURABLE_BACKEND: 'storage',
      TENANT_NAME: 'contoso',
      TENANT_BASE_URL: first.TENANT_BASE_URL,
      TENANT_AUTH_URL: first.TENANT_AUTH_URL,
      TENANT_CLIENT_ID: 'm2m',
      SYNC_SINKS: first.SYNC_SINKS,
      DOWNSTREAM_WEBHOOK_URL: first.DOWNSTREAM_WEBHOOK_URL,
      APP_SETTINGS_BASE64: deployedBase64,
    };
    const r = hook('provision.js', [], refreshed);
    expect(r.code).toBe(0);
    const set = setIn(r.calls);
    expect(set).toMatchObject({
      DELTA_URL: first.DELTA_URL,
      OTEL_EXPORTER_OTLP_ENDPOINT: first.OTEL_EXPORTER_OTLP_ENDPOINT,
      SYNC_SCHEMA_CHANGES: 'propagate',
      APP_SETTINGS_BASE64: deployedBase64,
    });
    expect(r.stderr).toContain('restored from the deployment: ');
    expect(r.stderr).toContain('DELTA_URL');
    for (const secretish of [...values, deployedBase64]) expect(r.stderr + r.stdout).not.toContain(secretish);
  });

  it('preprovision refuses a backend switch nobody asked for, and a credential in the environment, before azd is asked anything', () => {
    const switched = hook('provision.js', [], { ...first, DURABLE_BACKEND: 'scheduler' });
    expect(switched.code).toBe(1);
    expect(switched.stderr).toMatch(
      /DURABLE_BACKEND is scheduler, but the deployed app keeps its orchestrations in storage/,
    );
    expect(switched.calls).toEqual([]);
    const credential = hook('provision.js', [], {
      ...first,
      OTEL_EXPORTER_OTLP_HEADERS: 'api-key=k3y-private',
    });
    expect(credential.code).toBe(1);
    expect(credential.stderr).toMatch(/OTEL_EXPORTER_OTLP_HEADERS_SECRET_NAME/);
    expect(credential.stderr).not.toContain('k3y-private');
    expect(credential.calls).toEqual([]);
  });

  it('postdown: clears the suffix, so the next azd up gets new names', () => {
    const r = hook('provision.js', ['--after-down'], {
      AZURE_ENV_NAME: 'prod',
      AZURE_RESOURCE_SUFFIX: 'a1b2c3',
    });
    expect(r.code).toBe(0);
    expect(r.calls).toEqual([['env', 'set', 'AZURE_RESOURCE_SUFFIX', '']]);
  });

  it('prepackage refuses to stage for another backend than the deployed one; predeploy refuses to ship one', () => {
    const out = join(dir, 'never-staged');
    const pkg = hook('package.js', ['--out', out], {
      PROVISIONED_DURABLE_BACKEND: 'storage',
      DURABLE_BACKEND: 'scheduler',
    });
    expect(pkg.code).toBe(1);
    expect(pkg.stderr).toMatch(
      /DURABLE_BACKEND is scheduler, but the deployed app keeps its orchestrations in storage/,
    );
    expect(existsSync(out)).toBe(false);
    // A package staged for the scheduler (as after `azd env set DURABLE_BACKEND scheduler` with the migrate flag),
    // shipped with `azd deploy` alone onto the app provisioned for storage.
    const staged = join(dir, 'staged');
    mkdirSync(staged);
    const host = JSON.parse(readFileSync(join(root, 'host.json'), 'utf8'));
    writeFileSync(join(staged, 'host.json'), JSON.stringify(hostJsonFor(host, 'scheduler')));
    const deploy = hook('deploy-check.js', ['--package', staged], { PROVISIONED_DURABLE_BACKEND: 'storage' });
    expect(deploy.code).toBe(1);
    expect(deploy.stderr).toMatch(/staged for scheduler .*provisioned for storage/);
    const ok = hook('deploy-check.js', ['--package', staged], { PROVISIONED_DURABLE_BACKEND: 'scheduler' });
    expect([ok.code, ok.stderr]).toEqual([
      0,
      'deploy: the package is for scheduler, as the app is provisioned\n',
    ]);
  });
});
