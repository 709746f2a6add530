import { loadConfig, readLocalSettings, type AppConfig } from '../shared/config';

/** The CLI reads the same setting names as the app: environment first, then local.settings.json. */
export function cliConfig(cwd = process.cwd()): AppConfig {
  return loadConfig({ ...readLocalSettings(cwd), ...process.env }, { cwd });
}
