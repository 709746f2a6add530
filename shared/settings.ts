import type { z } from 'zod';
import { CATALOG_SETTINGS } from './catalog/settings';
import {
  configOf,
  coreSettings,
  CORE_GROUPS,
  isHosted,
  refineCore,
  type AppConfig,
  type CoreSettings,
  type SettingsPart,
} from './config';
import { ConfigError } from './errors';
import { readSinks, SINK_SETTINGS } from './sinks';
import { SINK_OUTPUT } from './sinks/output';

/**
 * Every setting the app reads, composed: the core ones (shared/config/, which names no feature and no sink), the
 * parts the vocabulary below the features declares (the catalog's, what every sink reads), each sink's own, and the
 * parts the features declare (given by the composition root, shared/app.ts). Read once at start-up, every bad
 * setting named in one error; docs/configuration.md is generated from the same schema (`npm run docs`).
 */
export interface AppSettings {
  schema: z.ZodObject;
  /** The reference's sections, in order: the core's, then each part's. */
  groups: ReadonlyArray<{ id: string; title: string }>;
  /** Reads every setting once, naming every bad one in a single error. */
  load(env: Record<string, string | undefined>, options?: { cwd?: string }): AppConfig;
}

type Settings = CoreSettings & Record<string, unknown>;

export function appSettings(features: readonly SettingsPart[]): AppSettings {
  const parts: readonly SettingsPart[] = [CATALOG_SETTINGS, SINK_OUTPUT, ...features];
  const schema = coreSettings.extend(SINK_SETTINGS).extend(Object.assign({}, ...parts.map((p) => p.shape)));
  const sinksOf = (s: Settings) =>
    readSinks(s, {
      storage: Boolean(s.AzureWebJobsStorage || s.AzureWebJobsStorage__blobServiceUri),
      hosted: isHosted(s),
    });
  // The checks across settings — the core's, each part's, the sinks' — every bad one in one error.
  const checked = schema.superRefine((raw, ctx) => {
    const s = raw as Settings;
    refineCore(s, ctx);
    const issue = (setting: string, message: string) =>
      ctx.addIssue({ code: 'custom', path: [setting], message });
    for (const p of parts) p.refine?.(s, issue);
    for (const [setting, message] of sinksOf(s).problems) issue(setting, message);
  });
  return {
    schema,
    groups: [...CORE_GROUPS, ...parts.flatMap((p) => (p.group ? [p.group] : []))],
    load(env, options = {}) {
      const result = checked.safeParse(env);
      if (!result.success)
        throw new ConfigError(
          result.error.issues.map((i) => `${String(i.path[0] ?? 'settings')}: ${i.message}`),
        );
      const s = result.data as Settings;
      const cwd = options.cwd ?? process.cwd();
      const read = Object.fromEntries(parts.map((p) => [p.name, p.read(s, { cwd })]));
      return configOf(s, sinksOf(s), { cwd, parts: read });
    },
  };
}
