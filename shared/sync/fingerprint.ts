import { createHash } from 'node:crypto';

/** JSON with object keys sorted at every level: the same record always gives the same text. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const o = value as Record<string, unknown>;
  return `{${Object.keys(o)
    .filter((k) => o[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
    .join(',')}}`;
}

export const CONTENT_HASH_BYTES = 16;

/** 128 bits of sha256 over the canonical JSON: what "changed" means. */
export const contentHash = (record: unknown): Buffer =>
  createHash('sha256').update(canonicalJson(record)).digest().subarray(0, CONTENT_HASH_BYTES);

/** hash(stream, record id, content hash): the same change always has the same id, so downstream can de-duplicate. */
export const changeId = (stream: string, id: string, hash: Buffer): string =>
  createHash('sha256')
    .update(stream)
    .update('\0')
    .update(id)
    .update('\0')
    .update(hash)
    .digest('hex')
    .slice(0, 32);
