import { readFile } from 'node:fs/promises';
import type { Plugin } from 'esbuild';

/**
 * The one place that reaches into a dependency's internals: durable-functions' compiled DurableClient and
 * getClient require axios and validator at their top, so every cold start paid for them (~35 ms of the bundle's
 * ~145 ms registration, measured with `node --cpu-prof` on 2026-11-27: axios alone pulls in undici, form-data and
 * mime-db). The app only needs them when a durable client makes its first call. This esbuild plugin rewrites those
 * `require`s into getters, so axios and validator load from the package's node_modules at first use
 * (tools/package.ts lists them in LOADED_ON_FIRST_USE; the bundle then does not even compile them).
 *
 * On upgrading durable-functions: the build fails if a line below is no longer found — check how the new version
 * uses `axios_1` / `validator_1` (still only `axios_1.default` and `validator_1.isURL`?) and update the
 * replacements, then run `npm run bench -- coldstart` and the package test (which starts an orchestration through
 * the staged bundle on the local host).
 */
export const LAZY_REQUIRES: ReadonlyArray<{ file: RegExp; from: string; to: string }> = [
  {
    file: /durable-functions[\\/]lib[\\/]src[\\/]durableClient[\\/]DurableClient\.js$/,
    from: 'const axios_1 = require("axios");',
    to: 'const axios_1 = { get default() { return require("axios").default; } };',
  },
  {
    file: /durable-functions[\\/]lib[\\/]src[\\/]durableClient[\\/]DurableClient\.js$/,
    from: 'const validator_1 = require("validator");',
    to: 'const validator_1 = { get isURL() { return require("validator").isURL; } };',
  },
  {
    file: /durable-functions[\\/]lib[\\/]src[\\/]durableClient[\\/]getClient\.js$/,
    from: 'const validator_1 = require("validator");',
    to: 'const validator_1 = { get isURL() { return require("validator").isURL; } };',
  },
];

/** Modules the rewritten files load on first use: external to the bundle. */
export const LAZY_REQUIRED_MODULES = ['axios', 'validator'];

export function lazyRequires(): Plugin {
  const files = [...new Set(LAZY_REQUIRES.map((r) => r.file.source))].map((s) => new RegExp(s));
  return {
    name: 'lazy-requires',
    setup(build) {
      const applied = new Set<(typeof LAZY_REQUIRES)[number]>();
      for (const filter of files)
        build.onLoad({ filter }, async (args) => {
          let contents = await readFile(args.path, 'utf8');
          for (const rule of LAZY_REQUIRES) {
            if (!rule.file.test(args.path)) continue;
            if (!contents.includes(rule.from))
              throw new Error(
                `tools/lazy-requires.ts: "${rule.from}" is no longer in ${args.path} — see the file's header on upgrading`,
              );
            contents = contents.replace(rule.from, rule.to);
            applied.add(rule);
          }
          return { contents, loader: 'js' };
        });
      build.onEnd((result) => {
        const missing = LAZY_REQUIRES.filter((r) => !applied.has(r));
        if (!result.errors.length && missing.length)
          throw new Error(
            `tools/lazy-requires.ts: no bundled file matched ${missing.map((r) => r.file).join(', ')} — see the file's header on upgrading`,
          );
      });
    },
  };
}
