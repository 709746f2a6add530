import { z } from 'zod';
import { optional, secretName, type SettingsPart } from '../config';

export const DEFAULT_EXPORTS_MAX_CONCURRENT = 2;

export interface ExportSettings {
  /** EXPORTS_MAX_CONCURRENT: exports running at once for the tenant; more get 429. */
  maxConcurrent: number;
  /** EXPORTS_REQUEST_SECRET_NAME: when set, a request also needs a Standard Webhooks signature. */
  requestSecretName?: string;
}

export const EXPORT_SETTINGS: SettingsPart<ExportSettings> = {
  name: 'exports',
  group: { id: 'export', title: 'Export' },
  shape: {
    EXPORTS_MAX_CONCURRENT: optional(
      z.coerce.number().int('a whole number').min(1, 'at least 1').max(50, 'at most 50'),
    ).meta({
      description: 'Exports running at once for the tenant (1–50); more get 429.',
      default: '`2`',
      usedBy: 'export',
      group: 'export',
    }),
    // When set, POST /api/exports also needs a Standard Webhooks signature made with this secret.
    EXPORTS_REQUEST_SECRET_NAME: optional(secretName).meta({
      description:
        'When set, `POST /api/exports` also needs a Standard Webhooks signature made with this secret.',
      default: 'unset',
      usedBy: 'export',
      group: 'secret-name',
    }),
  },
  read: (s) => ({
    maxConcurrent: (s.EXPORTS_MAX_CONCURRENT as number | undefined) ?? DEFAULT_EXPORTS_MAX_CONCURRENT,
    requestSecretName: s.EXPORTS_REQUEST_SECRET_NAME as string | undefined,
  }),
};
