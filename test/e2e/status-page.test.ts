import { readFileSync, writeFileSync } from 'node:fs';
import { inflateSync } from 'node:zlib';
import type { Browser } from 'playwright-core';
import { launchBrowser } from '../helpers/browser';
import { eventually } from '../helpers/host';
import { stackFixture, type Stack } from '../helpers/stack';

/**
 * The status page in Chromium against the local stack: after three syncs, one failed through a sandbox fault,
 * the page shows each run, marks the failed one visibly (not by colour alone), draws one mark per run in every
 * chart, renders a non-blank screenshot, and passes axe-core with no serious or critical violation.
 */
jest.setTimeout(150_000);

let stack: Stack;
let browser: Browser;
beforeAll(async () => {
  [stack, browser] = await Promise.all([stackFixture({ sandbox: { records: 40 } }), launchBrowser()]);
});
afterAll(async () => {
  await browser?.close();
  await stack?.close();
});

const finishedRuns = (n: number) =>
  eventually(
    async () => {
      const { body } = await stack.json('manage/runs?kind=sync');
      const runs = body.runs as Array<{ id: string; outcome: string }>;
      return runs.length >= n && runs.every((r) => r.outcome !== 'running') && runs;
    },
    `${n} finished sync runs`,
    90_000,
  );

/** Distinct colours in a PNG's pixels (8-bit RGB/RGBA, no interlace): a blank page has one or two. */
function distinctColours(png: Buffer): number {
  let at = 8;
  let width = 0;
  let colourType = 0;
  const idat: Buffer[] = [];
  while (at < png.length) {
    const len = png.readUInt32BE(at);
    const type = png.toString('ascii', at + 4, at + 8);
    const data = png.subarray(at + 8, at + 8 + len);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      colourType = data[9];
    }
    if (type === 'IDAT') idat.push(data);
    at += 12 + len;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const bpp = colourType === 6 ? 4 : 3;
  const stride = width * bpp + 1;
  const colours = new Set<number>();
  // Filtered bytes are not pixels, but distinct byte triples still separate a blank image from a drawn one.
  for (let row = 0; row * stride < raw.length; row += 7)
    for (let x = 1; x < stride - 3; x += bpp * 5) colours.add(raw.readUIntBE(row * stride + x, 3));
  return colours.size;
}

describe('status page in Chromium', () => {
  it('shows every run, marks the failed one, one chart mark per run, not blank, and accessible', async () => {
    // Two good runs, then one failed by a sandbox fault (it stays failed: nothing resumes it here).
    for (const [n, fault] of [
      [1, false],
      [2, false],
      [3, true],
    ] as const) {
      if (fault) await stack.sb.hook('faults', { route: 'graphql', status: 400, count: 6 });
      // Started the moment the history says the last one ended: accepted at once, finishing orchestration or not.
      const { status, text } = await stack.json('manage/sync', { method: 'POST' });
      expect([n, status, status === 202 ? '' : text]).toEqual([n, 202, '']);
      await finishedRuns(n);
    }
    const runs = await finishedRuns(3);
    expect(runs.some((r) => r.outcome === 'failed')).toBe(true);

    // CSP forbids every script on the page; axe is injected by the test, so the context bypasses CSP.
    const context = await browser.newContext({ bypassCSP: true, viewport: { width: 1100, height: 1400 } });
    const page = await context.newPage();
    const res = await page.goto(`${stack.apiBaseUrl}/manage/status?code=${stack.keys.master}`);
    expect(res?.status()).toBe(200);

    for (const r of runs)
      await expect(page.locator(`tr.run-row[data-run="${r.id}"]`).count()).resolves.toBe(1);
    const failedRow = page.locator('tr.run-row.failed');
    await expect(failedRow.count()).resolves.toBe(runs.filter((r) => r.outcome === 'failed').length);
    // Marked by text and shape, not only colour.
    await expect(failedRow.first().textContent()).resolves.toContain('✕ failed');
    await expect(page.locator('#chart-runs .failed-mark').count()).resolves.toBe(
      runs.filter((r) => r.outcome === 'failed').length,
    );
    for (const chart of ['#chart-runs', '#chart-streams', '#chart-duration'])
      await expect(page.locator(`${chart} .run-mark`).count()).resolves.toBe(runs.length);
    await expect(page.getByRole('img', { name: 'Runs over time, by outcome' }).count()).resolves.toBe(1);

    // The failed run's details: the error and the action that fixes it, reachable by keyboard.
    const detail = page.locator('tr.detail-row.failed').first();
    await expect(detail.getByText('What fixes it:').isVisible()).resolves.toBe(false);
    await detail.locator('summary').focus();
    await page.keyboard.press('Enter');
    await expect(detail.getByText('What fixes it:').isVisible()).resolves.toBe(true);

    // The parts at a glance.
    for (const part of [
      'Credential',
      'Delegated session',
      'Last sync',
      'Next scheduled sync',
      'Last export',
      'Last import',
      'Secret store',
      'Storage',
    ])
      await expect(page.locator('li.part', { hasText: part }).count()).resolves.toBeGreaterThan(0);

    const shot = await page.screenshot({ fullPage: true });
    expect(distinctColours(shot)).toBeGreaterThan(20);
    // `STATUS_SCREENSHOT=docs/status-page.png npm run test:e2e` refreshes the README's picture.
    if (process.env.STATUS_SCREENSHOT) writeFileSync(process.env.STATUS_SCREENSHOT, shot);

    await page.addScriptTag({ content: readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8') });
    const violations = await page.evaluate(async () => {
      const axe = (
        window as unknown as {
          axe: {
            run: () => Promise<{ violations: Array<{ id: string; impact: string; nodes: unknown[] }> }>;
          };
        }
      ).axe;
      const result = await axe.run();
      return result.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length }));
    });
    expect(violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')).toEqual([]);
    console.log(`axe-core on the status page: ${JSON.stringify(violations)}`);
    await context.close();
  });

  it('Sync now, pressed while a sync runs, waits for it and starts the next — under the page’s own CSP', async () => {
    const earlier = new Set((await finishedRuns(0)).map((r) => r.id));
    // Slow first requests keep a sync running while the page opens and the button is pressed (4 s once was too
    // short a window on a loaded machine: the sync had ended before the click).
    await stack.sb.hook('faults', { route: 'graphql', delayMs: 6000, count: 2 });
    expect((await stack.json('manage/sync', { method: 'POST' })).status).toBe(202);
    const running = await eventually(async () => {
      const { body } = await stack.json('manage/runs?kind=sync&limit=1');
      const [latest] = body.runs as Array<{ id: string; outcome: string }>;
      return latest?.outcome === 'running' && latest;
    }, 'the slow sync to be running');
    // No bypass: the page's Content-Security-Policy must let its one script run and fetch.
    const context = await browser.newContext();
    const page = await context.newPage();
    const blocked: string[] = [];
    page.on('console', (m) => {
      if (/Content Security Policy|Refused to/i.test(m.text())) blocked.push(m.text());
    });
    await page.goto(`${stack.apiBaseUrl}/manage/status?code=${stack.keys.master}`);
    await page.getByRole('button', { name: 'Sync now' }).click();
    // The 409 is not shown as an error: the page says it waits, with when it asks again.
    await page
      .getByRole('status')
      .filter({ hasText: /A sync is running.*starts when it has ended/ })
      .waitFor();
    // Once the running sync ends, the page starts one and reloads to show it.
    await page.waitForEvent('load', { timeout: 60_000 });
    const next = await eventually(async () => {
      const { body } = await stack.json('manage/runs?kind=sync&limit=1');
      const [latest] = body.runs as Array<{ id: string; outcome: string; trigger: string }>;
      return (
        latest &&
        latest.id !== running.id &&
        !earlier.has(latest.id) &&
        latest.outcome !== 'running' &&
        latest
      );
    }, 'the run the button started to end');
    expect(next).toMatchObject({ trigger: 'manual', outcome: 'succeeded' });
    await page.reload();
    await expect(page.locator(`tr.run-row[data-run="${next.id}"]`).count()).resolves.toBe(1);
    expect(blocked).toEqual([]);
    await context.close();
  });

  it('the admin page links to the status page with its key', async () => {
    const page = await browser.newPage();
    await page.goto(`${stack.apiBaseUrl}/manage?code=${stack.keys.master}`);
    await page.getByRole('link', { name: /Status page/ }).click();
    await page.waitForURL(/\/manage\/status\?code=/);
    await expect(page.getByRole('heading', { name: 'At a glance' }).count()).resolves.toBe(1);
    await page.close();
  });
});
