import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import {
  alertRuleNames,
  configurationPage,
  errorsPage,
  FIGURE_PAGES,
  figures,
  withFigures,
} from '../../tools/docs';
import { CLI } from '../helpers/cli';

/*
 * The docs cannot drift from the code: the configuration page is what the schema generates, every link
 * resolves, every CLI command and flag and every npm script they name exists, every `METHOD /api/…` route they
 * name is registered, and the blocks marked `<!-- docs-commands: runnable -->` run (against the embedded
 * sandbox, in a temporary folder).
 */
const root = resolve(__dirname, '../..');
const docs = readdirSync(join(root, 'docs'))
  .filter((f) => f.endsWith('.md'))
  .map((f) => `docs/${f}`);
const decisions = readdirSync(join(root, 'docs/decisions')).map((f) => `docs/decisions/${f}`);
const pages = ['README.md', 'CONTRIBUTING.md', 'CHANGELOG.md', ...docs, ...decisions];
const text = (page: string) => readFileSync(join(root, page), 'utf8');

/** Fenced bash blocks, each with whether the line before it marks it runnable. */
function bashBlocks(page: string): Array<{ runnable: boolean; lines: string[] }> {
  const blocks: Array<{ runnable: boolean; lines: string[] }> = [];
  const lines = text(page).split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].trim() !== '```bash') continue;
    const before = lines
      .slice(0, i)
      .reverse()
      .find((l) => l.trim());
    const body: string[] = [];
    for (i++; i < lines.length && lines[i].trim() !== '```'; i++) body.push(lines[i]);
    blocks.push({ runnable: before?.trim() === '<!-- docs-commands: runnable -->', lines: body });
  }
  return blocks;
}

const cli = (args: string[], cwd = root) =>
  execFileSync(process.execPath, [CLI, ...args], { cwd, encoding: 'utf8', timeout: 60_000 });

describe('docs', () => {
  it('docs/configuration.md and docs/errors.md are what `npm run docs` generates from the settings schema and the error vocabulary', () => {
    expect(text('docs/configuration.md')).toBe(configurationPage());
    expect(text('docs/errors.md')).toBe(errorsPage());
  });

  it('the figures the docs quote are the code’s (functions, alert rules): `npm run docs` writes them', () => {
    const values = figures(root);
    expect(Number(values['function-count'])).toBeGreaterThan(30);
    for (const page of FIGURE_PAGES) {
      expect(text(page)).toMatch(/<!--figure:[\w-]+-->/);
      expect([page, withFigures(text(page), values)]).toEqual([page, text(page)]);
    }
    // Every alert rule has its row in operations.md's table, under its name.
    for (const rule of alertRuleNames(root))
      expect([rule, new RegExp(`^\\| ${rule}\\s+\\|`, 'm').test(text('docs/operations.md'))]).toEqual([
        rule,
        true,
      ]);
  });

  it('the README is a front door: at most 10 KB, and it links every docs page', () => {
    const readme = text('README.md');
    expect(Buffer.byteLength(readme)).toBeLessThanOrEqual(10 * 1024);
    for (const page of docs) expect([page, readme.includes(`](${page})`)]).toEqual([page, true]);
    expect(readme).toContain('](CONTRIBUTING.md)');
    expect(readme).toContain('](docs/decisions/)');
  });

  it('every relative link in every page resolves', () => {
    const broken: string[] = [];
    for (const page of pages)
      for (const [, target] of text(page).matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target) || target.startsWith('#')) continue;
        const path = resolve(root, dirname(page), target.split('#')[0]);
        if (!existsSync(path)) broken.push(`${page} → ${target}`);
      }
    expect(broken).toEqual([]);
  });

  it('every decision record is listed, and each says what would make us revisit it', () => {
    const index = text('docs/decisions/README.md');
    for (const adr of decisions.filter((d) => !d.endsWith('README.md'))) {
      expect([adr, index.includes(`](${adr.split('/').pop()})`)]).toEqual([adr, true]);
      for (const part of ['**Context.**', '**Decision.**', '**Consequences.**', '**Revisit when**'])
        expect([adr, text(adr).includes(part)]).toEqual([adr, true]);
    }
  });

  it('every CLI command and flag, and every npm script, the docs name exists', () => {
    const scripts = Object.keys(JSON.parse(text('package.json')).scripts);
    const helps = new Map<string, string>();
    const missing: string[] = [];
    for (const page of pages)
      for (const block of bashBlocks(page))
        for (const line of block.lines) {
          const command = line.replace(/\s+#.*$/, '');
          for (const [, name] of command.matchAll(/\bnpm run ([\w:-]+)/g))
            if (!scripts.includes(name)) missing.push(`${page}: npm run ${name}`);
          const use = /(?:npx |^|\s)tenant-integrations\s+([a-z]+)([^|&;<>]*)/.exec(command);
          if (!use) continue;
          const [, sub, rest] = use;
          if (!helps.has(sub)) {
            try {
              helps.set(sub, cli([sub, '--help']));
            } catch {
              helps.set(sub, '');
            }
          }
          const help = helps.get(sub) ?? '';
          if (!help) missing.push(`${page}: tenant-integrations ${sub}`);
          for (const [flag] of rest.matchAll(/--[a-z][\w-]*/g))
            if (!help.includes(flag)) missing.push(`${page}: tenant-integrations ${sub} ${flag}`);
        }
    expect(missing).toEqual([]);
    expect(helps.size).toBeGreaterThanOrEqual(3); // the check saw sync, export, secrets, …
  });

  it('every `METHOD /api/…` route the docs name is registered by a function', () => {
    const core = join(root, 'dist', 'devhost', 'functions-core.js');
    const dir = join(root, 'dist', 'functions');
    const files = readdirSync(dir).filter((f) => f.endsWith('.js'));
    const script = `
      require(${JSON.stringify(core)}).installFunctionsCore();
      for (const f of ${JSON.stringify(files.map((f) => join(dir, f)))}) require(f);
      const out = [];
      for (const m of require(${JSON.stringify(core)}).registrations.values())
        for (const b of Object.values(m.metadata.bindings)) if (b.type === 'httpTrigger') out.push({ route: b.route, methods: b.methods });
      process.stdout.write(JSON.stringify(out));`;
    const routes = JSON.parse(
      execFileSync(process.execPath, ['-e', script], {
        env: { ...process.env, AzureWebJobsStorage: '' },
      }).toString(),
    ) as Array<{ route: string; methods?: string[] }>;
    const matches = (method: string, path: string) =>
      routes.some(
        (r) =>
          (!r.methods || r.methods.map((m) => m.toUpperCase()).includes(method)) &&
          new RegExp(`^${r.route.replace(/\{[^}]+\}/g, '[^/]+')}$`).test(path),
      );
    const named: string[] = [];
    let seen = 0;
    for (const page of pages)
      for (const [, method, path] of text(page).matchAll(
        /\b(GET|POST|PUT|DELETE|PATCH) \/api\/([\w{}/.-]*[\w}])/g,
      )) {
        seen++;
        if (!matches(method, path.replace(/\{[^}]+\}|…/g, 'x')))
          named.push(`${page}: ${method} /api/${path}`);
      }
    expect(named).toEqual([]);
    expect(seen).toBeGreaterThan(5);
  });

  it('the runnable blocks run, in order, in a fresh folder', () => {
    const cwd = mkdtempSync(join(tmpdir(), 'ti-docs-'));
    try {
      const runnable = pages.flatMap((p) =>
        bashBlocks(p)
          .filter((b) => b.runnable)
          .map((b) => ({ p, b })),
      );
      expect(runnable.length).toBeGreaterThan(0);
      for (const { b } of runnable)
        for (const line of b.lines) {
          const command = line.replace(/\s+#.*$/, '').trim();
          if (!command) continue;
          const args = /^npx tenant-integrations\s+(.*)$/.exec(command)?.[1].split(/\s+/);
          if (!args)
            throw new Error(`a runnable block may hold only tenant-integrations commands: ${command}`);
          cli(args, cwd);
        }
      // What the README promises: change files under ./out, and the export's file and manifest.
      expect(readdirSync(join(cwd, 'out')).length).toBeGreaterThan(0);
      expect(readdirSync(join(cwd, 'export'))).toEqual(expect.arrayContaining(['manifest.json']));
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  }, 120_000);
});
