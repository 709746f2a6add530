import {
  Kind as AstKind,
  type DocumentNode,
  type FragmentDefinitionNode,
  type SelectionSetNode,
  type ValueNode,
} from 'graphql';
import { z } from 'zod';

/**
 * Limits a tenant may enforce without announcing them (the seed: "not shown"), for tests and demos of how the app
 * learns them: a query-complexity ceiling and a per-credential request rate. Off unless asked for (`sandbox
 * --limits complexity=N,rate=R`, or the `limits` hook).
 */
export const limitsSchema = z
  .object({
    /** The most a query may cost: each field 1, a paged field's selection times its page size. */
    complexity: z.number().int().min(1).max(10_000_000).nullable().optional(),
    /** Requests a second per credential; the next one in the same second is a 429 (fixed one-second windows). */
    rate: z.number().int().min(1).max(100_000).nullable().optional(),
  })
  .strict();
export type Limits = { complexity?: number; rate?: number };

/** `complexity=400,rate=8` → the limits; a word it does not know is an error naming it. */
export function parseLimits(text: string): Limits {
  const out: Record<string, number> = {};
  for (const part of text.split(',').filter(Boolean)) {
    const m = /^(complexity|rate)=(\d+)$/.exec(part.trim());
    if (!m) throw new Error(`--limits: "${part}" is not complexity=N or rate=R`);
    out[m[1]] = Number(m[2]);
  }
  const result = limitsSchema.safeParse(out);
  if (!result.success)
    throw new Error(
      `--limits: ${result.error.issues.map((i) => `${i.path.join('.')} ${i.message.toLowerCase()}`).join('; ')}`,
    );
  const parsed = result.data;
  return { complexity: parsed.complexity ?? undefined, rate: parsed.rate ?? undefined };
}

/** Arguments that set how many records a field answers: what multiplies its selection's cost. */
const PAGE_ARGS = new Set(['first', 'last', 'limit', 'perPage', 'pageSize', 'take', 'size', 'count', 'top']);

/**
 * What a query costs, counted as GitHub and Shopify count it: every field 1, and a field given a page size costs
 * its selection times that size. Variables are read for the sizes; fragments are followed once per spread.
 */
export function complexityOf(document: DocumentNode, variables: Record<string, unknown> = {}): number {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of document.definitions)
    if (d.kind === AstKind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
  const sizeOf = (v: ValueNode): number => {
    if (v.kind === AstKind.INT) return Number(v.value);
    if (v.kind === AstKind.VARIABLE) {
      const n = variables[v.name.value];
      return typeof n === 'number' && Number.isFinite(n) ? n : 1;
    }
    return 1;
  };
  const cost = (set: SelectionSetNode | undefined, depth: number): number => {
    if (!set || depth > 64) return 0;
    let total = 0;
    for (const s of set.selections) {
      if (s.kind === AstKind.FIELD) {
        if (s.name.value.startsWith('__')) continue;
        const size = s.arguments?.find((a) => PAGE_ARGS.has(a.name.value));
        const inner = cost(s.selectionSet, depth + 1);
        total += 1 + (size ? Math.max(1, sizeOf(size.value)) * inner : inner);
      } else if (s.kind === AstKind.INLINE_FRAGMENT) total += cost(s.selectionSet, depth + 1);
      else total += cost(fragments.get(s.name.value)?.selectionSet, depth + 1);
    }
    return total;
  };
  let total = 0;
  for (const d of document.definitions)
    if (d.kind === AstKind.OPERATION_DEFINITION) total += cost(d.selectionSet, 0);
  return total;
}

export interface RateAnswer {
  allowed: boolean;
  /** The IETF RateLimit fields (draft-ietf-httpapi-ratelimit-headers), and Retry-After on a refusal. */
  headers: Record<string, string>;
}

/** Fixed one-second windows per credential, by the machine's clock (a test's frozen sandbox clock would stop them). */
export class RateWindows {
  private readonly windows = new Map<string, { start: number; used: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  admit(key: string, rate: number): RateAnswer {
    const now = this.now();
    let w = this.windows.get(key);
    if (!w || now - w.start >= 1000) {
      w = { start: now - (now % 1000), used: 0 };
      this.windows.set(key, w);
      if (this.windows.size > 10_000) this.windows.clear();
    }
    const resetSeconds = Math.max(1, Math.ceil((w.start + 1000 - now) / 1000));
    const allowed = w.used < rate;
    if (allowed) w.used++;
    const headers: Record<string, string> = {
      'ratelimit-limit': String(rate),
      'ratelimit-remaining': String(Math.max(0, rate - w.used)),
      'ratelimit-reset': String(resetSeconds),
      'ratelimit-policy': `${rate};w=1`,
    };
    if (!allowed) headers['retry-after'] = String(resetSeconds);
    return { allowed, headers };
  }
}
