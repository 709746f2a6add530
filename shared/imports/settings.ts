import { resolve } from 'node:path';
import { z } from 'zod';
import { durationMs, durationSetting, optional, secretName, type SettingsPart } from '../config';

/** IMPORT_OPERATIONS_FILE, IMPORTS_MAX_ITEMS, IMPORTS_ADMIN_WAIT, IMPORTS_REQUEST_SECRET_NAME, IMPORTS_RETENTION_DAYS. */
export interface ImportSettings {
  operationsFile?: string;
  maxItems: number;
  adminWaitMs: number;
  requestSecretName?: string;
  retentionDays: number;
}

export const IMPORT_SETTINGS: SettingsPart<ImportSettings> = {
  name: 'imports',
  group: { id: 'import', title: 'Import (write-back with the admin’s session)' },
  shape: {
    IMPORT_OPERATIONS_FILE: optional(z.string().min(1)).meta({
      description:
        'JSON file of the mutations `POST /api/imports` may run (`{ "operations": { "name": "mutation …" } }`); nothing else can be run.',
      default: 'unset: imports are off (in development: the sandbox’s `updateKpi` and `updateControl`)',
      usedBy: 'import',
      group: 'import',
    }),
    IMPORTS_REQUEST_SECRET_NAME: optional(secretName).meta({
      description:
        'When set, `POST /api/imports` also needs a Standard Webhooks signature made with this secret (as exports with `EXPORTS_REQUEST_SECRET_NAME`).',
      default: 'unset',
      usedBy: 'import',
      group: 'secret-name',
    }),
    IMPORTS_RETENTION_DAYS: optional(
      z.coerce.number().int('a whole number').min(1, 'at least 1').max(365, 'at most 365'),
    ).meta({
      description:
        'How many days an import’s items and per-item results are kept (Blob Storage deletes the items by a lifecycle rule, the app the results); its run summary follows `RUN_HISTORY_DAYS`.',
      default: '`30`',
      usedBy: 'import',
      group: 'import',
    }),
    IMPORTS_MAX_ITEMS: optional(
      z.coerce.number().int('a whole number').min(1, 'at least 1').max(100_000, 'at most 100000'),
    ).meta({
      description: 'Items one import may hold (1–100000); a larger body is refused with 413.',
      default: '`1000`',
      usedBy: 'import',
      group: 'import',
    }),
    IMPORTS_ADMIN_WAIT: optional(durationSetting(60_000, '1m')).meta({
      description:
        'How long an import waits — for its admin to sign in again after the session was lost (`waiting_for_admin`), or for the tenant to answer again (`waiting_for_tenant`) — before it fails, the items not sent skipped.',
      default: '`P1D`',
      usedBy: 'import',
      group: 'import',
    }),
  },
  refine(s, issue) {
    // An import's items must outlive its longest wait (and a day to apply them), or a waiting import loses them.
    const retentionMs = ((s.IMPORTS_RETENTION_DAYS as number | undefined) ?? 30) * 86_400_000;
    if (retentionMs < durationMs((s.IMPORTS_ADMIN_WAIT as string | undefined) ?? 'P1D') + 86_400_000)
      issue(
        'IMPORTS_RETENTION_DAYS',
        'must be at least a day longer than IMPORTS_ADMIN_WAIT (a waiting import needs its items)',
      );
  },
  read: (s, { cwd }) => ({
    operationsFile: s.IMPORT_OPERATIONS_FILE ? resolve(cwd, s.IMPORT_OPERATIONS_FILE as string) : undefined,
    maxItems: (s.IMPORTS_MAX_ITEMS as number | undefined) ?? 1000,
    adminWaitMs: durationMs((s.IMPORTS_ADMIN_WAIT as string | undefined) ?? 'P1D'),
    requestSecretName: s.IMPORTS_REQUEST_SECRET_NAME as string | undefined,
    retentionDays: (s.IMPORTS_RETENTION_DAYS as number | undefined) ?? 30,
  }),
};
