import type { Browser } from 'playwright-core';
import { launchBrowser } from '../helpers/browser';
import { sandboxFixture, type SandboxFixture } from '../helpers/sandbox';

jest.setTimeout(60_000);

let sb: SandboxFixture;
let browser: Browser;
beforeAll(async () => {
  [sb, browser] = await Promise.all([sandboxFixture(), launchBrowser()]);
});
afterAll(async () => {
  await browser?.close();
  await sb?.close();
});

describe('device page in Chromium', () => {
  it('open verification_uri_complete, log in, approve — and the poller gets its token', async () => {
    const { body } = await sb.deviceAuthorization();
    expect((await sb.pollDevice(body.device_code)).body.error).toBe('authorization_pending');
    const page = await browser.newPage();
    await page.goto(body.verification_uri_complete);
    // The code arrives pre-filled from the link.
    expect(await page.getByLabel('Code from your device').inputValue()).toBe(body.user_code);
    await page.getByLabel('Username').fill('admin');
    await page.getByLabel('Password').fill('sandbox-admin');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Yes, grant access' }).click();
    await expect(page.getByRole('status').textContent()).resolves.toContain('You can close this window');
    await sb.advance(5);
    const tokens = await sb.pollDevice(body.device_code);
    expect(tokens.status).toBe(200);
    expect(tokens.body.refresh_token).toEqual(expect.any(String));
    await page.close();
  });

  it('a wrong password shows an error and keeps the code; deny makes the poller stop', async () => {
    const { body } = await sb.deviceAuthorization();
    const page = await browser.newPage();
    await page.goto(body.verification_uri);
    await page.getByLabel('Code from your device').fill(body.user_code.toLowerCase());
    await page.getByLabel('Username').fill('member');
    await page.getByLabel('Password').fill('wrong');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toContain('Invalid username or password');
    await page.getByLabel('Password').fill('sandbox-member');
    await page.getByLabel('Username').fill('member');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'No, deny' }).click();
    expect((await sb.pollDevice(body.device_code)).body.error).toBe('access_denied');
    await page.close();
  });

  it('the portal: a Super User creates a credential and copies the secret', async () => {
    const page = await browser.newPage();
    await page.goto(`${sb.baseUrl}/${sb.tenant}/login`);
    await page.getByLabel('Username').fill('admin');
    await page.getByLabel('Password').fill('sandbox-admin');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('link', { name: 'API Credentials' }).click();
    await page.getByLabel('Label').fill('Browser-made');
    await page.getByRole('button', { name: 'Create credential' }).click();
    const secret = (await page.locator('#client-secret').textContent()) as string;
    const clientId = (await page.locator('.notice code').first().textContent()) as string;
    expect((await sb.clientCredentials(clientId, secret)).status).toBe(200);
    await page.close();
  });
});
