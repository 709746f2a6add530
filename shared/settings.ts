import { configOf, coreSettings, isHosted, refineCore, type AppConfig, type CoreSettings } from './config';
import { ConfigError } from './errors';
import { readSinks, SINK_SETTINGS } from './sinks';

/**
 * Every setting the app reads: the core ones (shared/config/, which knows no sink) and each sink's own, declared
 * with the sink (shared/sinks/). This loader stands above both and composes them; docs/configuration.md is
 * generated from this schema (`npm run docs`).
 */
export const settingsSchema = coreSettings.extend(SINK_SETTINGS);

type Settings = CoreSettings & Record<string, unknown>;

const sinksOf = (s: Settings) =>
  readSinks(s, {
    storage: Boolean(s.AzureWebJobsStorage || s.AzureWebJobsStorage__blobServiceUri),
    hosted: isHosted(s),
  });

/** The checks across settings, the sinks' with the core's: every bad setting is named in one error. */
const checked = settingsSchema.superRefine((raw, ctx) => {
  const s = raw as Settings;
  refineCore(s, ctx);
  for (const [setting, message] of sinksOf(s).problems)
    ctx.addIssue({ code: 'custom', path: [setting], message });
});

/** Reads every setting once, naming every bad one in a single error. */
export function loadConfig(
  env: Record<string, string | undefined>,
  options: { cwd?: string } = {},
): AppConfig {
  const result = checked.safeParse(env);
  if (!result.success)
    throw new ConfigError(result.error.issues.map((i) => `${String(i.path[0] ?? 'settings')}: ${i.message}`));
  const s = result.data as Settings;
  return configOf(s, sinksOf(s), options);
}
