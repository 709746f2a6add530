import type { Browser } from 'playwright-core';
import { launchBrowser } from '../helpers/browser';
import { eventually } from '../helpers/host';
import { stackFixture, type Stack } from '../helpers/stack';

jest.setTimeout(120_000);

let stack: Stack;
let browser: Browser;
beforeAll(async () => {
  [stack, browser] = await Promise.all([stackFixture(), launchBrowser()]);
});
afterAll(async () => {
  await browser?.close();
  await stack?.close();
});

describe('admin page in Chromium against the local stack', () => {
  it('start a login, follow the link, sign in as the admin, approve — the page shows the session connected without a reload', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const responses: string[] = [];
    page.on('response', (r) => {
      if (r.url().includes('/api/manage'))
        void r.text().then(
          (t) => responses.push(t),
          () => undefined,
        );
    });
    await page.goto(`${stack.apiBaseUrl}/manage?code=${stack.keys.master}`);
    await page.locator('#session-state', { hasText: 'not connected' }).waitFor();

    await page.getByRole('button', { name: 'Start device login' }).click();
    const code = page.getByLabel('User code');
    await eventually(async () => /^[A-Z]{4}-\d{4}$/.test((await code.textContent()) ?? ''), 'the user code');
    const userCode = (await code.textContent()) as string;
    await expect(page.getByRole('img', { name: 'QR code of the login link' }).innerHTML()).resolves.toContain(
      '<svg',
    );
    await expect(page.getByRole('status').textContent()).resolves.toContain('Waiting for you to sign in');
    await expect(page.locator('#remaining').textContent()).resolves.toMatch(/^\d+:\d{2}$/);
    // Keyboard: the start button is disabled while waiting; Cancel is reachable.
    await expect(page.getByRole('button', { name: 'Start device login' }).isDisabled()).resolves.toBe(true);
    await expect(page.getByRole('button', { name: 'Cancel' }).isVisible()).resolves.toBe(true);

    // The link opens the sandbox's device page in a new tab, with the code filled in.
    const [device] = await Promise.all([
      context.waitForEvent('page'),
      page.getByRole('link', { name: /\/device$/ }).click(),
    ]);
    await device.waitForLoadState();
    expect(await device.getByLabel('Code from your device').inputValue()).toBe(userCode);
    await device.getByLabel('Username').fill('admin');
    await device.getByLabel('Password').fill('sandbox-admin');
    await device.getByRole('button', { name: 'Sign in' }).click();
    await device.getByRole('button', { name: 'Yes, grant access' }).click();
    await expect(device.getByRole('status').textContent()).resolves.toContain('You can close this window');
    await device.close();

    // The orchestration's next durable timer fires on the host clock; the sandbox's interval passes too.
    await stack.advance(5);
    await page.locator('#session-state', { hasText: /^connected$/ }).waitFor({ timeout: 15_000 });
    await expect(page.getByRole('status').textContent()).resolves.toContain('Connected. Signed in as admin.');
    await expect(page.locator('#session-who').textContent()).resolves.toBe('Ada Admin (admin)');
    await expect(page.locator('#session-next').textContent()).resolves.not.toBe('—');
    // What this admin's session lets imports do: nothing, outside development without IMPORT_OPERATIONS_FILE.
    await expect(page.locator('#session-enables').textContent()).resolves.toMatch(
      /^nothing: imports are off until IMPORT_OPERATIONS_FILE/,
    );
    await expect(page.getByLabel('User code').isVisible()).resolves.toBe(false);
    expect(page.url()).toContain('/api/manage?'); // no navigation happened

    // Nothing the page received carries a token; the refresh token is in the secret store.
    const refreshToken = (await stack.secrets())[`delegated-refresh-token-${stack.sb.tenant}`];
    expect(refreshToken).toEqual(expect.any(String));
    const seen = responses.join('\n') + (await page.content());
    expect(seen).not.toContain(refreshToken);
    expect(seen).not.toMatch(/eyJ[\w-]+\.[\w-]+\.[\w-]+|refresh_token|access_token/);
    await context.close();
  });

  it('a login already running is picked up after a reload, and Cancel ends it', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const started = await stack.json('manage/device-login?force=true', { method: 'POST' });
    expect(started.status).toBe(202);
    await page.goto(`${stack.apiBaseUrl}/manage?code=${stack.keys.master}`);
    await eventually(
      async () => (await page.getByLabel('User code').textContent()) === started.body.userCode,
      'the running login on the page',
    );
    await page.getByRole('button', { name: 'Cancel' }).focus();
    await page.keyboard.press('Enter');
    await eventually(
      async () => ((await page.getByRole('status').textContent()) ?? '').includes('cancelled'),
      'the page to show the login cancelled',
    );
    expect((await stack.json(`manage/device-login/${started.body.id}`)).body.state).toBe('cancelled');
    await context.close();
  });

  it('without the admin key the page is refused', async () => {
    const page = await browser.newPage();
    // Chromium shows its own error page for an empty 401, so ask through the page's request context.
    expect((await page.request.get(`${stack.apiBaseUrl}/manage`)).status()).toBe(401);
    expect((await page.request.get(`${stack.apiBaseUrl}/manage?code=${stack.keys.function}`)).status()).toBe(
      401,
    );
    await page.close();
  });
});
