/** The configuration's vocabulary and its core settings (shared/settings.ts composes every part with them). */
export * from './core';
export * from './hosting';
export * from './local-settings';
export * from './part';
export * from './schema';
