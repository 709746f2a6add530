import { GraphqlErrors } from '../errors';

/**
 * What a tenant that limits what one request may cost (complexity, cost points, nodes, answer size) says when a
 * page asks too much — the seed shows no such limit, so it is learnt from the refusal: GitHub's
 * `MAX_NODE_LIMIT_EXCEEDED`, Shopify's `MAX_COST_EXCEEDED`, graphql-query-complexity's "Query has complexity 1700,
 * which exceeds the maximum of 400", Hot Chocolate's `HC0047`, "first must be at most 50".
 */
const LIMIT_CODES =
  /COMPLEX|COST|NODE_LIMIT|TOO_LARGE|TOO_MANY_(NODES|RECORDS|ITEMS|RESULTS)|PAGE_SIZE|MAX_?(PAGE|FIRST|LIMIT|RESULTS|NODES|DEPTH)|^HC0047$/i;
const LIMIT_WORDS =
  /complexity|\bcost\b|too (complex|expensive|large|many (nodes|records|items|results))|fewer records|page size|exceeds? the max|max(imum)? (page size|(number of )?(nodes|records|items|results))|(first|last|limit|perPage|pageSize|take)\b.{0,40}\b(at most|cannot exceed|must not exceed|no more than|maximum|less than or equal)/i;
/** Words that say the request was too frequent, not too big: a rate limit is the pacer's (shared/net/pacer.ts). */
const RATE_WORDS = /\brate\b|too many requests|throttl|per (second|minute|hour)/i;

export interface SizeRefusal {
  /** The page size to try next: what the numbers allow, else half. Below 1: nothing smaller can help. */
  next: number;
  /** The tenant's words, bounded: for the error when no smaller page helps. */
  reason: string;
  /** Which limit, in a few words of ours ("the tenant's complexity ceiling"): what a run reports. */
  limit: string;
}

function limitOf(text: string): string {
  if (/complex/i.test(text)) return 'the tenant’s complexity ceiling';
  if (/cost/i.test(text)) return 'the tenant’s cost limit';
  if (/node/i.test(text)) return 'the tenant’s node limit';
  if (/large|bytes|size of the (answer|response)/i.test(text)) return 'the tenant’s answer-size limit';
  return 'the tenant’s page-size limit';
}

const numbers = (text: string) => [...text.matchAll(/\d[\d,]*/g)].map((m) => Number(m[0].replace(/,/g, '')));

/**
 * Whether `err` is the tenant refusing a page for asking too much, and the page size to try instead. With a cost and
 * a maximum in the words ("complexity 1700 … maximum of 400") the size shrinks in their proportion; with one number
 * beside a page-size argument ("first must be at most 50") that number is the size; otherwise the size halves.
 */
export function sizeRefusal(err: unknown, pageSize: number): SizeRefusal | undefined {
  if (!(err instanceof GraphqlErrors)) return undefined;
  const hit = err.errors.find(
    (e) =>
      !RATE_WORDS.test(e.message) &&
      !/RATE|THROTTL/i.test(e.code ?? '') &&
      ((e.code !== undefined && LIMIT_CODES.test(e.code)) || LIMIT_WORDS.test(e.message)),
  );
  if (!hit) return undefined;
  const reason = hit.message.length > 200 ? `${hit.message.slice(0, 199)}…` : hit.message;
  const n = numbers(hit.message).filter((x) => x > 0);
  let next = Math.floor(pageSize / 2);
  const [a, b] = n;
  if (n.length >= 2 && a > b) next = Math.floor((pageSize * b) / a);
  else if (
    n.length === 1 &&
    /first|last|limit|perPage|pageSize|page size|take/i.test(hit.message) &&
    a < pageSize
  )
    next = a;
  // The numbers count the query's fixed part too: while there is a smaller size, try it, down to 1.
  next = pageSize <= 1 ? 0 : Math.min(Math.max(next, 1), pageSize - 1);
  return { next, reason, limit: limitOf(`${hit.code ?? ''} ${hit.message}`) };
}
