import { createHash } from 'node:crypto';
import { IntegrationError } from '../errors';
import type { PersonalPolicy, StreamDefinition } from '../streams';

/**
 * A stream's personal fields made what its policy says, on each page before anything else sees it (change detection,
 * every sink, an export file, a webhook body): `drop` takes the field out, `hash` puts a keyed HMAC in its place
 * (docs/personal-data.md). The same value hashes the same in every stream, run and sink, so joins still work: an
 * e-mail address is hashed as written in lower case, trimmed; every other value as written.
 */

/** SYNC_PERSONAL_DATA: what applies to a field discovery marked when the streams file leaves it at `default`. */
export type PersonalDefault = Exclude<PersonalPolicy, 'default'>;
export const DEFAULT_PERSONAL_DATA: PersonalDefault = 'hash';

/** Keyed hashing (the key in the secret store: ./key.ts). */
export interface Hasher {
  /** The hash of one value: `h:` and 32 hex digits (128 bits of HMAC-SHA-256). */
  hash(value: string): string;
}

/** Distinct values whose hash is kept (names repeat: an owner on every control they own); the oldest go first. */
const MEMO = 20_000;

/**
 * HMAC-SHA-256 (RFC 2104) with the key's inner and outer pads hashed once, each value's hash continued from copies of
 * them: `createHmac` per value set the key up again every time (a sync of 60 000 people cost 1.19× one that keeps
 * them; docs/benchmarks.md, "Personal data"). The same bytes as `createHmac('sha256', key)` — a unit test holds it.
 */
export function hmacHasher(key: Buffer): Hasher {
  const block = Buffer.alloc(64);
  (key.length > 64 ? createHash('sha256').update(key).digest() : key).copy(block);
  const pad = (byte: number) => createHash('sha256').update(block.map((b) => b ^ byte));
  const inner = pad(0x36);
  const outer = pad(0x5c);
  const memo = new Map<string, string>();
  return {
    hash: (value) => {
      let h = memo.get(value);
      if (h === undefined) {
        const digest = outer.copy().update(inner.copy().update(value, 'utf8').digest()).digest('hex');
        h = `h:${digest.slice(0, 32)}`;
        if (memo.size >= MEMO) memo.delete(memo.keys().next().value as string);
        memo.set(value, h);
      }
      return h;
    },
  };
}

/** The streams with every `default` replaced by SYNC_PERSONAL_DATA's choice: what a run's digest and passes see. */
export function resolvePersonal(streams: StreamDefinition[], chosen: PersonalDefault): StreamDefinition[] {
  return streams.map((s) =>
    s.personal && Object.values(s.personal).includes('default')
      ? {
          ...s,
          personal: Object.fromEntries(
            Object.entries(s.personal).map(([f, p]) => [f, p === 'default' ? chosen : p]),
          ),
        }
      : s,
  );
}

/** Whether the stream hashes any field (it then needs the key before its first page). */
export const hashes = (s: StreamDefinition) =>
  Object.values(s.personal ?? {}).some((p) => p === 'hash' || p === 'default');

const EMAIL = /^[^@\s]+@[^@\s]+$/;

/** The canonical text of a value before hashing; undefined for none (null stays null: nothing to hide). */
function canonical(value: unknown): string | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === 'string') return EMAIL.test(value.trim()) ? value.trim().toLowerCase() : value;
  return JSON.stringify(value);
}

type Step = { at: string[]; policy: 'drop' | 'hash' };

function apply(node: unknown, at: string[], i: number, policy: Step['policy'], hasher?: Hasher): void {
  if (Array.isArray(node)) {
    for (const item of node) apply(item, at, i, policy, hasher);
    return;
  }
  if (!node || typeof node !== 'object') return;
  const obj = node as Record<string, unknown>;
  const key = at[i];
  if (!(key in obj)) return;
  if (i < at.length - 1) return apply(obj[key], at, i + 1, policy, hasher);
  if (policy === 'drop') {
    delete obj[key];
    return;
  }
  const hashOne = (v: unknown) => {
    const text = canonical(v);
    return text === undefined ? v : (hasher as Hasher).hash(text);
  };
  obj[key] = Array.isArray(obj[key]) ? (obj[key] as unknown[]).map(hashOne) : hashOne(obj[key]);
}

/**
 * The page transform of a stream, or undefined when it keeps everything. A stream that hashes without a key fails
 * here, before its first page: a value is never sent as it came because the key could not be had.
 */
export function protector(
  stream: StreamDefinition,
  hasher: Hasher | undefined,
): ((records: unknown[]) => unknown[]) | undefined {
  const steps: Step[] = Object.entries(stream.personal ?? {})
    .filter(([, p]) => p !== 'keep')
    .map(([field, p]) => ({ at: field.split('.'), policy: p === 'drop' ? 'drop' : 'hash' }));
  if (!steps.length) return undefined;
  if (steps.some((s) => s.policy === 'hash') && !hasher)
    throw new IntegrationError(
      'config_invalid',
      `stream ${stream.name} hashes personal data but no hash key was given: set SYNC_HASH_SECRET_NAME to a secret the app can read`,
    );
  return (records) => {
    for (const r of records) for (const s of steps) apply(r, s.at, 0, s.policy, hasher);
    return records;
  };
}
