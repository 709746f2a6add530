import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { ClientCredentialsProvider } from '../../shared/auth/client-credentials';
import { DelegatedSession } from '../../shared/auth/delegated-session';
import { runDeviceFlow } from '../../shared/device-login/terminal';
import { requestDeviceCode } from '../../shared/device-login/idp';
import { tenantEndpoints } from '../../shared/auth/endpoints';
import type { TenantSettings } from '../../shared/config';
import { CredentialRejected } from '../../shared/errors';
import { createSecretStore, LocalFileSecretStore } from '../../shared/secrets';
import { FileSessionMetadataStore } from '../../shared/state/session-metadata';
import { launchBrowser } from '../helpers/browser';
import { approveOnKeycloak, keycloakAdmin, keycloakInfo, type KeycloakInfo } from './keycloak';

/*
 * The production code paths against the real Keycloak the seed describes. Keycloak runs on real time, so
 * the device-flow tests wait its real 5-second interval. Secrets: the development file store (Lowkey Vault,
 * the Key Vault emulator, is not on this machine's Maven Central mirror — see the note on issue 9).
 */
jest.setTimeout(120_000);

let kc: KeycloakInfo;
let tenant: TenantSettings;
let dir: string;
let browser: Browser;
beforeAll(async () => {
  kc = keycloakInfo();
  // Other files rotate it too: start from a secret this file knows.
  kc.clientSecret = await (await keycloakAdmin(kc)).regenerateSecret('demo-sync');
  tenant = { name: kc.realm, baseUrl: kc.url, authUrl: kc.url, clientId: kc.clientId };
  dir = await mkdtemp(join(tmpdir(), 'ti-conf-'));
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await rm(dir, { recursive: true, force: true });
});

const store = async (name: string, value: string) => {
  const file = join(dir, `${name}.json`);
  await new LocalFileSecretStore(file).set('tenant-client-secret', value);
  return createSecretStore({ localSecretsFile: file });
};

describe('client credentials against Keycloak', () => {
  it('the seed call gets a Keycloak token for the service account; concurrent callers share it', async () => {
    const secrets = await store('cc', kc.clientSecret);
    const m2m = new ClientCredentialsProvider(tenant, secrets, 'tenant-client-secret');
    const [a, b] = await Promise.all([m2m.getToken(), m2m.getToken()]);
    expect(a).toBe(b);
    const claims = JSON.parse(Buffer.from(a.split('.')[1], 'base64url').toString());
    expect(claims).toMatchObject({ azp: 'demo-sync', preferred_username: 'service-account-demo-sync' });
    expect(claims.iss).toBe(`${kc.url}/realms/acme`);
  });

  it('secret regenerated in Keycloak and updated in the store mid-run: the next token request recovers', async () => {
    const admin = await keycloakAdmin(kc);
    const secrets = await store('rotate', kc.clientSecret);
    const m2m = new ClientCredentialsProvider(tenant, secrets, 'tenant-client-secret', {
      minValiditySeconds: 400, // every call asks Keycloak (its tokens live 300 s)
    });
    await m2m.getToken();
    const fresh = await admin.regenerateSecret('demo-sync');
    await new LocalFileSecretStore(join(dir, 'rotate.json')).set('tenant-client-secret', fresh);
    // Keycloak answers the old secret with 401 unauthorized_client; the provider re-reads the store once.
    await expect(m2m.getToken()).resolves.toEqual(expect.any(String));
    kc.clientSecret = fresh;
  });

  it('client disabled in Keycloak → CredentialRejected, with what to do', async () => {
    const admin = await keycloakAdmin(kc);
    await admin.setEnabled('demo-sync', false);
    try {
      const secrets = await store('disabled', kc.clientSecret);
      const m2m = new ClientCredentialsProvider(tenant, secrets, 'tenant-client-secret');
      const err = await m2m.getToken().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CredentialRejected);
      expect((err as CredentialRejected).oauthError).toMatch(/invalid_client|unauthorized_client/);
      expect((err as Error).message).toContain('rotate the credential');
      expect((err as Error).message).not.toContain(kc.clientSecret);
    } finally {
      await admin.setEnabled('demo-sync', true);
    }
  });
});

describe('device login on Keycloak’s own device page', () => {
  it('code → Chromium login on Keycloak → token → stored session → refresh rotates the refresh token', async () => {
    const endpoints = tenantEndpoints(tenant);
    const code = await requestDeviceCode(endpoints);
    // Keycloak's user codes are letters only (seed says XXXX-NNNN): the client treats the code as opaque.
    expect(code.userCode).toMatch(/^[A-Z]{4}-[A-Z]{4}$/);
    expect(code).toMatchObject({ expiresInSeconds: 600, intervalSeconds: 5 });

    await approveOnKeycloak(browser, code.verificationUriComplete as string);

    const { state, tokens } = await runDeviceFlow(endpoints, code);
    expect(state.status).toBe('authorised');
    expect(tokens).toBeDefined();

    const secretsFile = join(dir, 'delegated.json');
    const secrets = createSecretStore({ localSecretsFile: secretsFile });
    const session = new DelegatedSession(
      tenant,
      secrets,
      new FileSessionMetadataStore(join(dir, 'sessions.json')),
    );
    const connected = await session.connect(tokens as NonNullable<typeof tokens>);
    expect(connected).toMatchObject({ username: 'admin', name: 'Ada Admin', state: 'connected' });
    const first = await new LocalFileSecretStore(secretsFile).get(session.secretName);
    await session.refresh();
    const second = await new LocalFileSecretStore(secretsFile).get(session.secretName);
    expect(second).not.toBe(first); // Keycloak rotates the refresh token on every refresh
    await expect(session.getToken()).resolves.toEqual(expect.any(String));
  });
});
