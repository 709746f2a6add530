import type { ErrorTable } from './text';

/** HTTP requests to the app: what a caller fixes, and the failure nobody expected. */
export const REQUEST_ERRORS = {
  unexpected: {
    title: 'Unexpected error',
    action:
      'See the message; the next run resumes from its checkpoint. If it repeats, report it with the run id.',
  },
  invalid_request: {
    title: 'Invalid request',
    action: 'Fix what `problems` (or the detail) names, and send the request again.',
  },
  unsupported_media_type: { title: 'Unsupported media type', action: 'Send the body as application/json.' },
  payload_too_large: { title: 'Payload too large', action: 'Send a smaller body.' },
  invalid_signature: {
    title: 'Invalid signature',
    action:
      'Sign the request the Standard Webhooks way with the secret its route’s `…_REQUEST_SECRET_NAME` setting names (docs/configuration.md).',
  },
  idempotency_key_reused: {
    title: 'Idempotency-Key reused',
    action: 'Use a new Idempotency-Key for a different request.',
  },
  idempotency_key_in_progress: {
    title: 'Request with this Idempotency-Key in progress',
    action: 'Retry after the time Retry-After names.',
    retryAfterSeconds: 1,
  },
  service_unavailable: {
    title: 'Service unavailable',
    action: 'Retry after the time Retry-After names; storage or the durable store did not answer.',
  },
  not_found: {
    title: 'Not found',
    action: 'Check the id: it may be wrong, or older than the history keeps.',
  },
  method_not_allowed: { title: 'Method not allowed', action: 'Use a method the detail names.' },
  unauthorized: {
    title: 'Unauthorized',
    action:
      'Send the key the route needs: the system key for the durable task API, the master key for /admin/ routes (`npm start` prints both).',
  },
} as const satisfies ErrorTable;
