import { z } from 'zod';

export const FAULT_ROUTES = ['token', 'device', 'graphql', 'certs', 'discovery'] as const;
export type FaultRoute = (typeof FAULT_ROUTES)[number];

export const faultSpecSchema = z
  .object({
    route: z.enum(FAULT_ROUTES),
    count: z.number().int().min(1).max(10_000).default(1),
    /** Requests to let through first (a failure part-way through a run). */
    after: z.number().int().min(0).max(10_000).default(0),
    status: z.number().int().min(400).max(599).optional(),
    retryAfterSeconds: z.number().int().min(0).max(3600).optional(),
    delayMs: z.number().int().min(0).max(60_000).optional(),
    reset: z.literal(true).optional(),
    /** 200 with a body that is not JSON. */
    malformed: z.literal(true).optional(),
    /** 307 to this address (a misconfigured proxy, or an attacker in front of the service). */
    redirect: z.url().optional(),
    /** The real answer with an `errors` entry added beside its data (GraphQL's partial success). */
    partial: z.literal(true).optional(),
    /** The real answer's headers and first half, then the connection is reset. */
    cut: z.literal(true).optional(),
    /** The GraphQL error's message for `status` or `partial` (a server that repeats what it was sent, at length). */
    message: z.string().min(1).max(100_000).optional(),
    /**
     * With `status` or `delayMs`: the request is handled first (a mutation runs), then the status is answered or the
     * answer waits — a gateway's 502 or a timeout after the tenant acted, where only the answer is lost.
     */
    handled: z.literal(true).optional(),
    /** Only requests whose body holds this text meet the fault (`"mutation"`: writes only); others pass by. */
    match: z.string().min(1).max(200).optional(),
  })
  .strict()
  .refine((f) => !f.handled || f.status !== undefined || f.delayMs !== undefined, {
    message: 'handled goes with status or delayMs',
  })
  .refine(
    (f) =>
      [
        f.status !== undefined,
        f.delayMs !== undefined,
        f.reset === true,
        f.malformed === true,
        f.redirect !== undefined,
        f.partial === true,
        f.cut === true,
      ].filter(Boolean).length === 1,
    { message: 'give exactly one of status, delayMs, reset, malformed, redirect, partial or cut' },
  );

export type FaultSpec = z.infer<typeof faultSpecSchema>;

/** Queued faults per route: the next `count` requests to that route get the fault. */
export class FaultQueue {
  private readonly queues = new Map<
    FaultRoute,
    Array<{ spec: FaultSpec; remaining: number; passes: number }>
  >();

  add(spec: FaultSpec): void {
    const q = this.queues.get(spec.route) ?? [];
    q.push({ spec, remaining: spec.count, passes: spec.after ?? 0 });
    this.queues.set(spec.route, q);
  }

  /** Whether the next fault of `route` looks at the request's body (`match`): then `take` needs its text. */
  wantsBody(route: string): boolean {
    return this.queues.get(route as FaultRoute)?.[0]?.spec.match !== undefined;
  }

  take(route: string, body?: string): FaultSpec | undefined {
    const q = this.queues.get(route as FaultRoute);
    const head = q?.[0];
    if (!q || !head) return undefined;
    if (head.spec.match !== undefined && !body?.includes(head.spec.match)) return undefined;
    if (head.passes > 0) {
      head.passes--;
      return undefined;
    }
    if (--head.remaining === 0) q.shift();
    return head.spec;
  }

  pending(): Array<{ route: FaultRoute; remaining: number }> {
    return [...this.queues.entries()].flatMap(([route, q]) =>
      q.map((f) => ({ route, remaining: f.remaining })),
    );
  }

  clear(): void {
    this.queues.clear();
  }
}
