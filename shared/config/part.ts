import type { z } from 'zod';

/**
 * A part of the configuration declared where it is used — a feature's settings (its settings.ts), the
 * catalog's, what every sink reads — with the schema of each setting (and its `.meta`, shared/config/schema.ts),
 * the checks across them, and `read`, which makes the part (kept as `config.parts[name]`, read with `partOf`). The
 * loader composes the core settings with every part (shared/settings.ts); docs/configuration.md is generated from
 * the same list.
 */
export interface SettingsPart<T = unknown> {
  /** Where the part is kept in the configuration: `config.parts[name]`. */
  name: string;
  /** Its section of the configuration reference, when its settings have their own (`group` in their meta). */
  group?: { id: string; title: string };
  /** Each setting's schema, with its `.meta`. */
  shape: Record<string, z.ZodType>;
  /** Checks across settings (one needs another): `issue` names the setting and what is wrong. */
  refine?(s: Readonly<Record<string, unknown>>, issue: (setting: string, message: string) => void): void;
  /** The part, from settings the composed schema parsed; `cwd` resolves the files a setting names. */
  read(s: Readonly<Record<string, unknown>>, options: { cwd: string }): T;
}

/**
 * A part as the loader read it, or — for a configuration made without it (a test's) — from its defaults. Only the
 * code that declares a part should read it.
 */
export function partOf<T>(config: { parts?: Readonly<Record<string, unknown>> }, part: SettingsPart<T>): T {
  const read = config.parts?.[part.name];
  return read === undefined ? part.read({}, { cwd: process.cwd() }) : (read as T);
}
