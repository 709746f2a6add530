import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import type { Browser } from 'playwright-core';

/** The Keycloak we test against: pinned, fetched from Maven Central, cached in the git-ignored .cache/. */
export const KEYCLOAK_VERSION = '26.5.6';
const ROOT = resolve(__dirname, '../..');
const CACHE = join(ROOT, '.cache');
const HOME = join(CACHE, `keycloak-${KEYCLOAK_VERSION}`);

export interface KeycloakInfo {
  url: string;
  realm: string;
  adminUser: string;
  adminPassword: string;
  clientId: string;
  clientSecret: string;
  bootSeconds: number;
  pid: number;
}

export function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => done(port));
    });
  });
}

/** mvn dependency:copy of the distribution, then tar; both skipped when the cache has it. */
export function ensureKeycloak(): string {
  if (existsSync(join(HOME, 'bin', 'kc.sh'))) return HOME;
  mkdirSync(CACHE, { recursive: true });
  const archive = join(CACHE, `keycloak-quarkus-dist-${KEYCLOAK_VERSION}.tar.gz`);
  if (!existsSync(archive)) {
    const mvn = spawnSync(
      'mvn',
      [
        '-q',
        '-B',
        'dependency:copy',
        `-Dartifact=org.keycloak:keycloak-quarkus-dist:${KEYCLOAK_VERSION}:tar.gz`,
        `-DoutputDirectory=${CACHE}`,
      ],
      { cwd: CACHE, stdio: 'inherit' },
    );
    if (mvn.status !== 0) throw new Error('mvn could not fetch Keycloak (needs Maven and Maven Central)');
  }
  const tar = spawnSync('tar', ['xzf', archive, '-C', CACHE], { stdio: 'inherit' });
  if (tar.status !== 0) throw new Error(`could not unpack ${archive}`);
  return HOME;
}

/** Starts Keycloak in dev mode on free loopback ports with this repository's realm; resolves when it serves. */
export async function startKeycloak(): Promise<{ info: KeycloakInfo; child: ChildProcess }> {
  const home = ensureKeycloak();
  mkdirSync(join(home, 'data', 'import'), { recursive: true });
  copyFileSync(join(__dirname, 'acme-realm.json'), join(home, 'data', 'import', 'acme-realm.json'));
  const [port, management] = [await freePort(), await freePort()];
  const clientSecret = randomBytes(18).toString('base64url');
  const adminPassword = randomBytes(12).toString('base64url');
  const started = Date.now();
  const child = spawn(
    join(home, 'bin', 'kc.sh'),
    [
      'start-dev',
      '--http-host=127.0.0.1',
      `--http-port=${port}`,
      `--http-management-port=${management}`,
      '--import-realm',
    ],
    {
      env: {
        ...process.env,
        KC_BOOTSTRAP_ADMIN_USERNAME: 'kcadmin',
        KC_BOOTSTRAP_ADMIN_PASSWORD: adminPassword,
        KC_DEMO_SYNC_SECRET: clientSecret,
        // Each run starts from the realm file: an in-memory database.
        KC_DB: 'dev-mem',
        JAVA_OPTS_KC_HEAP: '-Xms256m -Xmx768m',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    },
  );
  let log = '';
  child.stdout?.on('data', (d) => (log = (log + d).slice(-20_000)));
  child.stderr?.on('data', (d) => (log = (log + d).slice(-20_000)));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 240_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`Keycloak exited with ${child.exitCode}:\n${log}`);
    try {
      const res = await fetch(`${url}/realms/acme/.well-known/openid-configuration`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      stopKeycloak(child.pid as number);
      throw new Error(`Keycloak did not start within 240 s:\n${log}`);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  const info: KeycloakInfo = {
    url,
    realm: 'acme',
    adminUser: 'kcadmin',
    adminPassword,
    clientId: 'demo-sync',
    clientSecret,
    bootSeconds: Math.round((Date.now() - started) / 100) / 10,
    pid: child.pid as number,
  };
  return { info, child };
}

export function stopKeycloak(pid: number): void {
  try {
    process.kill(-pid, 'SIGTERM'); // the whole group: kc.sh and its java
  } catch {
    // already gone
  }
}

export const INFO_FILE = join(CACHE, 'keycloak-running.json');

export function keycloakInfo(): KeycloakInfo {
  return JSON.parse(readFileSync(INFO_FILE, 'utf8')) as KeycloakInfo;
}

/** Keycloak's admin REST API, with a token for the bootstrap admin. */
export async function keycloakAdmin(kc: KeycloakInfo) {
  const tokenRes = await fetch(`${kc.url}/realms/master/protocol/openid-connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'password',
      client_id: 'admin-cli',
      username: kc.adminUser,
      password: kc.adminPassword,
    }),
  });
  const { access_token: token } = (await tokenRes.json()) as { access_token: string };
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${kc.url}/admin/realms/${kc.realm}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`Keycloak admin ${method} ${path}: HTTP ${res.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  };
  const userUuid = async (username: string) =>
    (
      (await call('GET', `/users?exact=true&username=${encodeURIComponent(username)}`)) as Array<{
        id: string;
      }>
    )[0].id;
  const clientUuid = async (clientId: string) =>
    ((await call('GET', `/clients?clientId=${encodeURIComponent(clientId)}`)) as Array<{ id: string }>)[0].id;
  return {
    call,
    /** Regenerates a client's secret (the portal's "rotate"); answers the new value. */
    regenerateSecret: async (clientId: string) =>
      ((await call('POST', `/clients/${await clientUuid(clientId)}/client-secret`)) as { value: string })
        .value,
    setEnabled: async (clientId: string, enabled: boolean) => {
      const id = await clientUuid(clientId);
      const rep = await call('GET', `/clients/${id}`);
      await call('PUT', `/clients/${id}`, { ...rep, enabled });
    },
    /** Signs a person out of every session (Users → Sessions → Sign out). */
    logoutUser: async (username: string) => call('POST', `/users/${await userUuid(username)}/logout`),
    /** The person's "Enabled" switch. */
    setUserEnabled: async (username: string, enabled: boolean) => {
      const id = await userUuid(username);
      const rep = await call('GET', `/users/${id}`);
      await call('PUT', `/users/${id}`, { ...rep, enabled });
    },
  };
}

/**
 * A person approving a device login on Keycloak's own pages: with `user_code` in the link Keycloak goes straight
 * to its login form, then asks for consent, then says "Device Login Successful".
 */
export async function approveOnKeycloak(
  browser: Browser,
  verificationUriComplete: string,
  person = { username: 'admin', password: 'sandbox-admin' },
): Promise<void> {
  const page = await browser.newPage();
  try {
    await page.goto(verificationUriComplete);
    await page.locator('#username').fill(person.username);
    await page.locator('#password').fill(person.password);
    await page.locator('#kc-login').click();
    await page.getByText('Do you grant these access privileges?').waitFor();
    await page.getByRole('button', { name: 'Yes' }).click();
    await page.getByText('Device Login Successful').waitFor();
  } finally {
    await page.close();
  }
}
