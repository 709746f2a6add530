/**
 * The sync's 32-bit hashes of an id — the snapshot's index and the change detector's set of ids seen use them — by
 * two different algorithms, so that ids colliding in one are no likelier to collide in the other: FNV-1a with a final
 * mix (it spreads ids like `ctl-0000123` well, and places them in the table; a second seed gives the detector a second
 * hash), and MurmurHash3's x86 32-bit.
 */
export function fnv1a32(b: Buffer, start = 0, length = b.length, seed = 0x811c9dc5): number {
  let h = seed >>> 0;
  for (let i = start; i < start + length; i++) {
    h ^= b[i];
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  return h >>> 0;
}

export function murmur3_32(b: Buffer, start = 0, length = b.length): number {
  let h = 0x9747b28c;
  const end = start + length;
  let i = start;
  for (; i + 4 <= end; i += 4) {
    let k = b[i] | (b[i + 1] << 8) | (b[i + 2] << 16) | (b[i + 3] << 24);
    k = Math.imul(k, 0xcc9e2d51);
    k = (k << 15) | (k >>> 17);
    h ^= Math.imul(k, 0x1b873593);
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  if (i < end) {
    let k = b[i];
    if (i + 1 < end) k ^= b[i + 1] << 8;
    if (i + 2 < end) k ^= b[i + 2] << 16;
    k = Math.imul(k, 0xcc9e2d51);
    k = (k << 15) | (k >>> 17);
    h ^= Math.imul(k, 0x1b873593);
  }
  h ^= length;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
