import { z } from 'zod';
import { optional, serviceUrl, type AppConfig } from '../config';
import { nodePost } from '../net/http';
import type { SignedPoster, SignedPostOptions } from '../net/webhook';
import type { StreamCounts } from '../changes';
import type { ChangeBatch, ChangeSink, RunManifest, SinkModule } from './types';
import type { EraseOutcome } from './erase';

export type WebhookSinkOptions = Omit<SignedPostOptions, 'refusedHint' | 'unavailableHint'>;

/**
 * `webhook`: each page's changes POSTed to DOWNSTREAM_WEBHOOK_URL, signed the Standard Webhooks way. The
 * message id is derived from (run, stream, page), so it is the same on every retry and after a resume:
 * receivers de-duplicate on `webhook-id` (and on each change's `changeId`).
 */
export class WebhookSink implements ChangeSink {
  readonly description: string;
  /** Nothing named after a stream: every page goes to one receiver, the stream named in its body. */
  readonly ownNames: readonly string[] = [];
  names(): string[] {
    return [];
  }
  private readonly poster: SignedPoster;

  constructor(url: string, options: WebhookSinkOptions) {
    // Loaded here: the signing library is for those who send webhooks.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { SignedPoster: Poster } = require('../net/webhook') as typeof import('../net/webhook');
    this.poster = new Poster(url, {
      ...options,
      refusedHint: "check the receiver's secret and URL (DOWNSTREAM_WEBHOOK_URL)",
      unavailableHint: 'the page will be sent again from the checkpoint on the next run',
    });
    this.description = this.poster.description;
  }

  write(batch: ChangeBatch, options: { abortSignal?: AbortSignal } = {}) {
    const { tenant, runId, stream, page, changes } = batch;
    return this.poster.post(
      `${runId}/${stream}/${page}`,
      'sync.changes',
      { tenant, runId, stream, page, changes },
      options,
    );
  }

  endStream(tenant: string, runId: string, stream: string, changedPages: number[], counts: StreamCounts) {
    return this.poster.post(`${runId}/${stream}/end`, 'sync.stream.completed', {
      tenant,
      runId,
      stream,
      pages: changedPages.length,
      counts,
    });
  }

  /** Nothing held open. */
  async close(): Promise<void> {}

  /** What went to the receiver is the receiver's: the app cannot take it back, and says so. */
  async erase(): Promise<EraseOutcome> {
    return { erased: [], unreachable: [`${this.description}: erase the record there`] };
  }

  finish(manifest: RunManifest) {
    return this.poster.post(`${manifest.runId}/manifest`, 'sync.run.completed', manifest);
  }
}

/** The webhook sink's settings. */
const settings = {
  DOWNSTREAM_WEBHOOK_URL: optional(serviceUrl).meta({
    description: 'Where the `webhook` sink POSTs (https; http only on loopback).',
    default: 'unset',
    usedBy: 'sync (webhook sink)',
    group: 'sinks',
  }),
};

/** Where the webhook sink posts, as its settings say (undefined: DOWNSTREAM_WEBHOOK_URL unset). */
const urlOf = (config: Pick<AppConfig, 'sinks'>) =>
  (config.sinks.webhook as { url: string } | undefined)?.url;

export const webhookSink: SinkModule = {
  kind: 'webhook',
  usage: 'webhook',
  argument: z.undefined({ error: 'takes nothing after "webhook": the address is DOWNSTREAM_WEBHOOK_URL' }),
  settings: {
    shape: settings,
    read: (s) => {
      const url = (s as { DOWNSTREAM_WEBHOOK_URL?: string }).DOWNSTREAM_WEBHOOK_URL;
      return url ? { url } : undefined;
    },
  },
  requires: (_spec, { own }) => (own ? undefined : 'the webhook sink needs DOWNSTREAM_WEBHOOK_URL'),
  create: (_spec, { config, secrets, clock }) =>
    new WebhookSink(urlOf(config) ?? '', {
      secret: () => secrets.get(config.downstreamWebhookSecretName),
      clock,
    }),
  async doctor(_spec, { config }, signal) {
    const url = urlOf(config);
    if (!url)
      return {
        state: 'fail',
        found: 'SYNC_SINKS names webhook but DOWNSTREAM_WEBHOOK_URL is not set',
        action: 'Set DOWNSTREAM_WEBHOOK_URL.',
      };
    // An empty POST without a signature: any HTTP answer means the receiver is there (it should refuse it).
    const res = await nodePost(url, '', { abortSignal: signal, maxBytes: 4096, beyondMax: 'drop' });
    const origin = new URL(url).origin;
    return res.status < 500
      ? { state: 'ok', found: `${origin} answers (HTTP ${res.status} to an unsigned probe)` }
      : {
          state: 'fail',
          found: `${origin} answered HTTP ${res.status}`,
          action: 'Fix the receiver; the sync retries its pages.',
        };
  },
};
