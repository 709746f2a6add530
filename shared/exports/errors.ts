import { declareErrors } from '../errors';

/** The export webhook's codes. */
export const EXPORT_ERRORS = declareErrors({
  export_failed: {
    title: 'Export failed',
    action: 'Request the export again; the message names the stream that failed and why.',
  },
  too_many_exports: {
    title: 'Too many exports',
    action: 'Retry after the time Retry-After names, or raise EXPORTS_MAX_CONCURRENT.',
  },
});

declare module '../errors/codes' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type -- the codes above, added to the closed type
  interface FeatureErrorCodes extends Record<keyof typeof EXPORT_ERRORS, true> {}
}
