/*
 * Streams whose names would make one place of a sink: `orders` and `orders_changes` with the delta sink (whose
 * `orders` has a table `orders_changes`), `Controls` and `controls` where the place does not tell case apart (OneLake,
 * Windows and macOS folders, a blob downloaded to one), a stream named after the postgres sink's own tables. Found
 * before anything is written — at the start of a sync and by `doctor` — so that neither stream is written over the other.
 */
import type { ChangeSink } from './types';

export interface NameCollision {
  /** The place, as the first stream (or the sink) names it. */
  place: string;
  /** The streams that would share it, in the order given. */
  streams: string[];
  /** The sink keeps the place for itself. */
  own: boolean;
}

/** How places are compared: case folded (and Unicode composed), as the most forgiving store does. */
const fold = (name: string) => name.normalize('NFC').toLowerCase();

/** Every place two or more streams (or a stream and the sink itself) would share, for `streams` written to `sink`. */
export function nameCollisions(sink: ChangeSink, streams: readonly string[]): NameCollision[] {
  const places = new Map<string, { place: string; streams: string[]; own: boolean }>();
  const at = (name: string) => {
    const key = fold(name);
    let p = places.get(key);
    if (!p) places.set(key, (p = { place: name, streams: [], own: false }));
    return p;
  };
  for (const name of sink.ownNames) at(name).own = true;
  for (const stream of streams)
    for (const name of sink.names(stream)) {
      const p = at(name);
      if (!p.streams.includes(stream)) p.streams.push(stream);
    }
  return [...places.values()].filter((p) => p.streams.length + (p.own ? 1 : 0) > 1 && p.streams.length > 0);
}

/** Each stream a collision refuses, with why: the message names the place and every stream that would share it. */
export function refusedByName(collisions: NameCollision[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const c of collisions) {
    const why = c.own
      ? `stream ${c.streams[0]} would be written to ${c.place}, which the sink keeps for itself: give it another name`
      : `streams ${c.streams.join(' and ')} would all be written to ${c.place} (names equal once case is folded are one place): give one of them another name`;
    for (const s of c.streams) out.set(s, out.has(s) ? `${out.get(s)}; ${why}` : why);
  }
  for (const [s, why] of out) out.set(s, `${why} (its \`name\` in SYNC_STREAMS_FILE)`);
  return out;
}
