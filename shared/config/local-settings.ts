import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { z } from 'zod';
import { ConfigError } from '../errors';

const localSettingsSchema = z.object({ Values: z.record(z.string(), z.string()).optional() });

/** The CLI reads `local.settings.json` like the Functions host; the environment wins over it. */
export function readLocalSettings(cwd: string): Record<string, string> {
  let text: string;
  try {
    text = readFileSync(resolve(cwd, 'local.settings.json'), 'utf8');
  } catch {
    return {};
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ConfigError(['local.settings.json: not valid JSON'], 'local.settings.json');
  }
  const result = localSettingsSchema.safeParse(parsed);
  if (!result.success)
    throw new ConfigError(
      ['local.settings.json: "Values" must be an object of strings'],
      'local.settings.json',
    );
  return result.data.Values ?? {};
}
