import * as crypto from 'node:crypto';
import { createHash } from 'node:crypto';

export const CONTENT_HASH_BYTES = 16;

/** The 128 bits as hex: a change id's length. */
const CHANGE_ID_CHARS = 2 * CONTENT_HASH_BYTES;

// One-shot hashing where Node has it (20.12+, 21.7+): half the cost of createHash() for short inputs. As hex: a
// digest as a Buffer cost twice the hashing of a sandbox record (a Buffer per call), and the hex is the change id.
const sha256Hex: (data: string | Buffer) => string =
  typeof (crypto as { hash?: unknown }).hash === 'function'
    ? (data) =>
        (crypto as unknown as { hash(a: string, d: string | Buffer, e: 'hex'): string }).hash(
          'sha256',
          data,
          'hex',
        )
    : (data) => createHash('sha256').update(data).digest('hex');

/**
 * A record's content as text: its JSON as the server sent it. GraphQL returns fields in the order of the
 * document's selection set, so the same content always gives the same text; reordering a stream's fields
 * changes the text once (one update per record), which sorting keys would avoid at twice the CPU per record.
 */
export const recordJson = (record: unknown): string => JSON.stringify(record) ?? 'null';

/**
 * 128 bits of sha256 over (stream, record id, content), as hex: what "changed" means for a record, and the id of
 * the change that delivers that content, so downstream can de-duplicate. One hash per record; the id's length is
 * part of the input, so no (id, content) pair can pass for another.
 */
export const changeIdFor = (stream: string, id: string, json: string): string =>
  sha256Hex(`${stream}\0${id.length}\0${id}\0${json}`).slice(0, CHANGE_ID_CHARS);

const TOMBSTONE = Buffer.from('deleted\0');

/**
 * A deletion's change id: a tombstone of the last fingerprint seen — stable across retries, and never the id
 * of the change that created or updated the record.
 */
export const deletionIdOf = (lastFingerprint: Buffer): string =>
  sha256Hex(Buffer.concat([TOMBSTONE, lastFingerprint])).slice(0, CHANGE_ID_CHARS);
