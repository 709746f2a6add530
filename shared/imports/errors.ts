import { declareErrors } from '../errors';

/** The write-back's codes: an import, its items, its operations, its waits. */
export const IMPORT_ERRORS = declareErrors({
  import_failed: {
    title: 'Import failed',
    action:
      'See the message; each item’s result says what became of it — applied, refused, outcome unknown — and the skipped ones were not sent: post those again with new item keys.',
  },
  import_item_refused: {
    title: 'Item refused by the tenant',
    action:
      'The tenant refused this item before applying it (see its message): correct the item and post it again.',
  },
  admin_wait_expired: {
    title: 'No admin signed in in time',
    action:
      'The admin the import was accepted under must sign in on the admin page (/api/manage) within IMPORTS_ADMIN_WAIT of the session being lost; post the skipped items again once one has.',
  },
  tenant_wait_expired: {
    title: 'The tenant stayed unavailable',
    action:
      'The tenant service (or its identity provider) did not answer for all of IMPORTS_ADMIN_WAIT; the items not sent are skipped: post them again once it answers.',
  },
  imports_disabled: {
    title: 'Imports are off',
    action:
      'Name the mutations imports may run in a file set as IMPORT_OPERATIONS_FILE (docs/import.md; `tenant-integrations discover` proposes them); outside development nothing may write until then.',
  },
  unknown_operation: {
    title: 'Unknown operation',
    action:
      'Use one of the operations the detail lists, or add the mutation to the file named by IMPORT_OPERATIONS_FILE.',
  },
  operations_invalid: {
    title: 'Invalid import operations',
    action:
      'Fix the file named by IMPORT_OPERATIONS_FILE (the message names the operation and what is wrong).',
    setup: true,
  },
});

declare module '../errors/codes' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type -- the codes above, added to the closed type
  interface FeatureErrorCodes extends Record<keyof typeof IMPORT_ERRORS, true> {}
}
