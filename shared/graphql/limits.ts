import { GraphqlErrors } from '../errors';

/**
 * What a tenant that limits what one request may cost (complexity, cost points, nodes, items per page) says when a
 * page asks too much — the seed shows no such limit, so it is learnt from the refusal. Only an error that says so
 * counts: its code is one of the known ones, or its words name a limit AND say it was exceeded. A field that happens
 * to be called `cost`, a null in a non-null field, a validation error never lower a page (test/unit/tenant-limits:
 * the words of known servers, and the cases that must not match).
 */
const LIMIT_CODES = new Set(
  [
    'MAX_COMPLEXITY_EXCEEDED', // graphql-query-complexity's examples, Apollo
    'QUERY_TOO_COMPLEX',
    'TOO_COMPLEX_QUERY', // Contentful
    'COMPLEXITY_LIMIT_EXCEEDED',
    'MAX_COST_EXCEEDED', // Shopify
    'QUERY_COST_EXCEEDED',
    'MAX_NODE_LIMIT_EXCEEDED', // GitHub
    'NODE_LIMIT_EXCEEDED',
    'PAGE_SIZE_EXCEEDED',
    'MAX_PAGE_SIZE_EXCEEDED',
    'MAX_FIRST_EXCEEDED',
    'TOO_MANY_RESULTS',
    'TOO_MANY_NODES',
    'HC0047', // Hot Chocolate: the maximum allowed complexity was exceeded
  ].map((c) => c.toUpperCase()),
);

/** A limit that a smaller page lowers: complexity, cost, nodes, records or items per page, a paging argument. */
const LIMIT_NOUN =
  /\b(complexity|cost|nodes|records|items|results|page size|per page|first|last|limit|perPage|pageSize|take|response|answer)\b/i;
/** Said to be exceeded. */
const EXCEEDED =
  /exceed|\bmaximum\b|\bmax(imum)? (allowed|limit)|\bat most\b|cannot be (more|greater)|must not be (more|greater)|no more than|less than or equal|too (large|many)/i;
/** Said of the query itself, no limit named: "Query is too complex". */
const TOO_COSTLY = /\btoo (complex|expensive|costly)\b/i;
/** Errors of the query's shape or its data, whatever words they carry: never a size limit. */
const NOT_A_LIMIT =
  /^(cannot return null|cannot query field|unknown argument|unknown type|variable "\$|expected (value|type)|field "[^"]*" (of type|argument)|syntax error|int cannot represent|argument "[^"]*" has invalid value)/i;
/** Words that say the request was too frequent, not too big: a rate limit is the pacer's (shared/net/pacer.ts). */
const RATE_WORDS = /\brate\b|too many requests|throttl|per (second|minute|hour)/i;
/** A limit on how deep a query nests: no page size changes it. */
const DEPTH_WORDS = /\bdepth\b|\bnest(ed|ing)?\b/i;

/** Whether one GraphQL error is a refusal for asking too much (exported for the table of servers' words). */
export function isSizeRefusal(e: { message: string; code?: string }): boolean {
  const code = (e.code ?? '').toUpperCase();
  if (/RATE|THROTTL/.test(code) || RATE_WORDS.test(e.message) || DEPTH_WORDS.test(e.message)) return false;
  if (LIMIT_CODES.has(code)) return true;
  if (NOT_A_LIMIT.test(e.message.trim())) return false;
  return TOO_COSTLY.test(e.message) || (LIMIT_NOUN.test(e.message) && EXCEEDED.test(e.message));
}

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
  const hit = err.errors.find(isSizeRefusal);
  if (!hit) return undefined;
  const reason = hit.message.length > 200 ? `${hit.message.slice(0, 199)}…` : hit.message;
  const n = numbers(hit.message).filter((x) => x > 0);
  let next = Math.floor(pageSize / 2);
  const [a, b] = n;
  // Two numbers are what it cost and what is allowed, in either order ("is 11000 but it was 13000").
  if (n.length >= 2 && a !== b) next = Math.floor((pageSize * Math.min(a, b)) / Math.max(a, b));
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
