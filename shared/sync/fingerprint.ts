import * as crypto from 'node:crypto';
import { createHash } from 'node:crypto';

/** JSON with object keys sorted at every level: the same record always gives the same text. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  // Plain loops: this runs for every record of every run, and the array helpers cost ~2× here.
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) out += (i ? ',' : '') + canonicalJson(value[i]);
    return `${out}]`;
  }
  const o = value as Record<string, unknown>;
  const keys = Object.keys(o).sort();
  let out = '{';
  for (const k of keys) {
    const v = o[k];
    if (v === undefined) continue;
    out += `${out.length > 1 ? ',' : ''}${JSON.stringify(k)}:${canonicalJson(v)}`;
  }
  return `${out}}`;
}

export const CONTENT_HASH_BYTES = 16;

// One-shot hashing where Node has it (20.12+, 21.7+): half the cost of createHash() for short inputs.
const sha256: (data: string | Buffer) => Buffer =
  typeof (crypto as { hash?: unknown }).hash === 'function'
    ? (data) =>
        (crypto as unknown as { hash(a: string, d: string | Buffer, e: 'buffer'): Buffer }).hash(
          'sha256',
          data,
          'buffer',
        )
    : (data) => createHash('sha256').update(data).digest();

/** 128 bits of sha256 over the canonical JSON: what "changed" means. */
export const contentHash = (record: unknown): Buffer =>
  sha256(canonicalJson(record)).subarray(0, CONTENT_HASH_BYTES);

/** hash(stream, record id, content hash): the same change always has the same id, so downstream can de-duplicate. */
export const changeId = (stream: string, id: string, hash: Buffer): string =>
  sha256(Buffer.concat([Buffer.from(`${stream}\0${id}\0`), hash]))
    .toString('hex')
    .slice(0, 32);
