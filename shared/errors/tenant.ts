import type { ErrorTable } from './text';

/** The tenant service: its answers, its limits, its schema, and a write whose answer was lost. */
export const TENANT_ERRORS = {
  upstream_unavailable: {
    title: 'Tenant service unavailable',
    action: 'The tenant service did not answer; the next run resumes from its checkpoint.',
  },
  upstream_timeout: {
    title: 'Tenant service timed out',
    action: 'The tenant service did not answer in time; the next run resumes from its checkpoint.',
  },
  upstream_rejected: {
    title: 'Tenant service refused the request',
    action: 'The tenant service refused the request; check the stream’s query (SYNC_STREAMS_FILE).',
  },
  upstream_malformed: {
    title: 'Unexpected answer from the tenant service',
    action: 'The tenant service answered something unexpected; check the stream’s paths.',
  },
  response_too_large: {
    title: 'Answer too large',
    action: 'The answer was larger than the client reads; use a smaller page size for the stream.',
  },
  tenant_limit: {
    title: 'The tenant’s limit leaves no room',
    action:
      'The tenant refuses a page of even one record (its complexity, cost or size limit, named in the message): select fewer fields for the stream in SYNC_STREAMS_FILE (`tenant-integrations discover` shows them), or ask the tenant to raise its limit.',
  },
  graphql_errors: {
    title: 'GraphQL errors',
    action:
      'The stream’s query was refused by the schema: run `tenant-integrations discover` to see the tenant’s schema, and fix the stream (SYNC_STREAMS_FILE).',
  },
  parent_unavailable: {
    title: 'A child stream’s parent has not been read',
    action:
      'A child stream is read after its parent stream: fix what stopped the parent (its own error, in the same run), or sync the parent stream too.',
  },
  listing_incomplete: {
    title: 'The tenant holds more records than the pass read',
    action:
      'The next run reads the stream again from the start. If it fails again, the stream’s paging loses records: run `tenant-integrations discover` and compare its paging (where pages start, the page size) with SYNC_STREAMS_FILE.',
  },
  duplicate_key: {
    title: 'Two records share the stream’s key',
    action:
      'The field the stream keys its records by (idPath) is not unique, so records would be lost: `tenant-integrations discover` proposes the record’s own key — set it as the stream’s idPath in SYNC_STREAMS_FILE. Nothing was merged; the stream resumes once its key is unique.',
  },
  schema_invalid: {
    title: 'The stream reads where the tenant’s schema is invalid',
    action:
      'The tenant serves a type graphql-js calls invalid (named in the message) and this stream selects it: take that field out of the stream in SYNC_STREAMS_FILE (`tenant-integrations discover` proposes streams without it), or ask the tenant to fix its schema. Other streams are not affected.',
  },
  introspection_refused: {
    title: 'The tenant refuses introspection',
    action:
      'Write the streams yourself in a file named by SYNC_STREAMS_FILE (docs/sync.md, “When introspection is refused”).',
  },
  schema_drift: {
    title: 'The tenant’s schema changed',
    action:
      'Run `tenant-integrations discover` and take the new catalog (or edit SYNC_STREAMS_FILE); SYNC_SCHEMA_CHANGES=propagate adopts such changes by itself.',
  },
  read_only_credential: {
    title: 'Mutation refused for a read-only credential',
    action: 'Run mutations with the delegated session of an admin, never with the M2M credential.',
    setup: true,
  },
  invalid_document: {
    title: 'Invalid GraphQL document',
    action: 'Fix the GraphQL document named in the message (one operation that parses).',
  },
  outcome_unknown: {
    title: 'Outcome unknown',
    action:
      'The item was sent (or about to be) and its answer was lost, so it may or may not have been applied; it is never sent again by itself. Check the record at the tenant, and post it again — with a new key — only if it did not apply.',
  },
} as const satisfies ErrorTable;
