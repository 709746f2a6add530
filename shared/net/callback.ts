import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { UpstreamError } from '../errors';
import { nodePost, type PostText } from './http';

/**
 * Where an export's callback may go. Link-local (169.254/16 — the cloud metadata service — and fe80::/10)
 * and Azure's platform address are refused always; loopback, private, shared and unique-local ranges unless
 * the app runs in development. Checked on the URL when the export is requested and again on every address
 * the host name resolves to when the callback is sent, so DNS cannot point it somewhere else later.
 */
const always = new BlockList();
always.addSubnet('169.254.0.0', 16, 'ipv4');
always.addAddress('168.63.129.16', 'ipv4');
always.addSubnet('0.0.0.0', 8, 'ipv4');
always.addSubnet('224.0.0.0', 3, 'ipv4'); // multicast and reserved
always.addSubnet('192.0.0.0', 24, 'ipv4'); // IETF protocol assignments
always.addSubnet('198.18.0.0', 15, 'ipv4'); // benchmarking
always.addSubnet('fe80::', 10, 'ipv6');
always.addSubnet('ff00::', 8, 'ipv6');
always.addAddress('::', 'ipv6');

const internal = new BlockList();
internal.addSubnet('127.0.0.0', 8, 'ipv4');
internal.addSubnet('10.0.0.0', 8, 'ipv4');
internal.addSubnet('172.16.0.0', 12, 'ipv4');
internal.addSubnet('192.168.0.0', 16, 'ipv4');
internal.addSubnet('100.64.0.0', 10, 'ipv4');
internal.addAddress('::1', 'ipv6');
internal.addSubnet('fc00::', 7, 'ipv6');

/** The 16 bytes of an IPv6 address (a trailing dotted IPv4 part allowed). */
function ipv6Bytes(address: string): number[] {
  let text = address.toLowerCase();
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number);
    text = `${text.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::');
  const groups = (s: string | undefined) => (s ? s.split(':').map((g) => parseInt(g, 16)) : []);
  const h = groups(head);
  const t = groups(tail);
  const all = tail === undefined ? h : [...h, ...new Array(8 - h.length - t.length).fill(0), ...t];
  return all.flatMap((g) => [g >> 8, g & 0xff]);
}

/**
 * IPv6 forms that carry an IPv4 address are judged as that address: mapped (`::ffff:a.b.c.d`), compatible
 * (`::/96`), NAT64 (`64:ff9b::/96`) and 6to4 (`2002::/16`, the address in bits 16-47).
 */
function plain(address: string): { address: string; family: 'ipv4' | 'ipv6' } {
  if (isIP(address) !== 6) return { address, family: 'ipv4' };
  const b = ipv6Bytes(address);
  const zero = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  const v4 = (at: number) => ({ address: b.slice(at, at + 4).join('.'), family: 'ipv4' as const });
  if (zero(0, 10) && b[10] === 0xff && b[11] === 0xff) return v4(12);
  if (zero(0, 12) && !zero(12, 15)) return v4(12); // not :: or ::1, which are IPv6's own
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zero(4, 12)) return v4(12);
  if (b[0] === 0x20 && b[1] === 0x02) return v4(2);
  return { address, family: 'ipv6' };
}

/** Why this address may not receive a callback, or undefined when it may. */
export function refusedAddress(address: string, options: { development: boolean }): string | undefined {
  const a = plain(address);
  if (always.check(a.address, a.family)) return `${address} is a link-local, metadata or reserved address`;
  if (!options.development && internal.check(a.address, a.family))
    return `${address} is a loopback or private address (allowed only in development)`;
  return undefined;
}

const LOCAL_NAMES = /^(localhost|.*\.localhost|.*\.local|.*\.internal)$/i;

/** Why this callback URL is refused, or undefined. Syntax, scheme and literal addresses only: names are checked when sent. */
export function refusedCallbackUrl(value: string, options: { development: boolean }): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'is not a URL';
  }
  if (url.protocol !== 'https:') return 'must be an https URL';
  if (url.username || url.password) return 'must not carry a user name or password';
  // `localhost.` is `localhost`: a trailing dot only says the name is fully qualified.
  const host = url.hostname.replace(/^\[|\]$/g, '').replace(/\.+$/, '');
  if (isIP(host)) {
    const why = refusedAddress(host, options);
    return why && `refused: ${why}`;
  }
  if (!options.development && LOCAL_NAMES.test(host)) return `refused: ${host} is a local name`;
  return undefined;
}

/** A DNS lookup that fails for addresses a callback may not reach (checked at connect time: no rebinding). */
export function guardedLookup(options: { development: boolean }): LookupFunction {
  return (hostname, lookupOptions, callback) => {
    dnsLookup(hostname, { ...lookupOptions, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const list = addresses as LookupAddress[];
      for (const a of list) {
        const why = refusedAddress(a.address, options);
        if (why) {
          return callback(
            Object.assign(new Error(`${hostname} resolves to ${why}`), { code: 'CALLBACK_REFUSED' }),
            '',
            0,
          );
        }
      }
      if ((lookupOptions as { all?: boolean }).all)
        return (callback as never as (e: null, a: LookupAddress[]) => void)(null, list);
      callback(null, list[0].address, list[0].family);
    });
  };
}

/**
 * How callbacks are sent: POST over node:https only, each address checked at connect time by the guarded
 * lookup (literal addresses, which skip the lookup, checked here), no redirects, the answer read to its end but
 * only its first 64 KiB kept, the caller's abort signal.
 */
export function guardedPost(options: { development: boolean }): PostText {
  const lookup = guardedLookup(options);
  return async (target, body, postOptions) => {
    const url = new URL(target);
    const where = `callback ${url.origin}`;
    if (url.protocol !== 'https:') throw new UpstreamError('upstream_rejected', where, 'refused: not https');
    const literal = url.hostname.replace(/^\[|\]$/g, '');
    const refused = isIP(literal) ? refusedAddress(literal, options) : undefined;
    if (refused) throw new UpstreamError('upstream_rejected', where, refused);
    try {
      return await nodePost(url.href, body, {
        ...postOptions,
        lookup,
        maxBytes: 64 * 1024,
        beyondMax: 'drop',
      });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'CALLBACK_REFUSED')
        throw new UpstreamError('upstream_rejected', where, (err as Error).message, { cause: err });
      throw err;
    }
  };
}
