import type { Browser } from 'playwright-core';
import { launchBrowser } from '../helpers/browser';
import { eventually } from '../helpers/host';
import { stackFixture, type Stack } from '../helpers/stack';
import { approveOnKeycloak, keycloakAdmin, keycloakInfo, type KeycloakInfo } from './keycloak';

/*
 * The admin device-login orchestration — the real libraries on the local host, durable timers, activities —
 * with Keycloak as the tenant's identity provider. Keycloak's clock is real, so this waits its 5 s interval.
 */
jest.setTimeout(120_000);

let kc: KeycloakInfo;
let stack: Stack;
let browser: Browser;
beforeAll(async () => {
  kc = keycloakInfo();
  kc.clientSecret = await (await keycloakAdmin(kc)).regenerateSecret('demo-sync');
  [stack, browser] = await Promise.all([
    stackFixture({
      env: {
        TENANT_NAME: kc.realm,
        TENANT_BASE_URL: kc.url,
        TENANT_AUTH_URL: kc.url,
        TENANT_CLIENT_ID: kc.clientId,
      },
    }),
    launchBrowser(),
  ]);
});
afterAll(async () => {
  await browser?.close();
  await stack?.close();
});

it('POST /api/manage/device-login → approve on Keycloak → authorised, the person named, refresh token stored', async () => {
  const started = await stack.json('manage/device-login', { method: 'POST' });
  expect(started.status).toBe(202);
  expect(started.body.verificationUriComplete).toBe(
    `${kc.url}/realms/${kc.realm}/device?user_code=${started.body.userCode}`,
  );
  await approveOnKeycloak(browser, started.body.verificationUriComplete);

  const done = await eventually(
    async () => {
      const s = await stack.json(`manage/device-login/${started.body.id}`);
      return s.body.state !== 'waiting' && s.body;
    },
    'the orchestration to finish',
    30_000,
  );
  expect(done).toMatchObject({ state: 'authorised', username: 'admin', name: 'Ada Admin' });
  const refreshToken = (await stack.secrets())[`delegated-refresh-token-${kc.realm}`];
  expect(refreshToken).toEqual(expect.any(String));
  expect((await stack.json('manage/session')).body).toMatchObject({ state: 'connected', username: 'admin' });
  // Nothing of the token in the host's log lines.
  expect(stack.logs()).not.toContain(refreshToken);
});
