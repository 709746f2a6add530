import { partOf } from '../config';
import { IntegrationError } from '../errors';
import { LASTING_SESSION, type DoctorCheck } from '../feature';
import { IMPORT_SETTINGS } from './settings';

/**
 * The import allow-list (IMPORT_OPERATIONS_FILE, else the built-in two): each operation parses and fits the
 * tenant's schema (its mutation fields exist, its variables' types are the schema's), and an admin's session is
 * there to run them. Whether that person may change a given record, only the tenant says, per item.
 */
export const importOperationsCheck: DoctorCheck = {
  name: 'import operations',
  async run({ config, access, embeddedSandbox, localSandbox }, signal) {
    const { loadOperations, schemaProblems } = await import('./operations');
    const settings = partOf(config, IMPORT_SETTINGS);
    let operations: Awaited<ReturnType<typeof loadOperations>>;
    try {
      operations = await loadOperations(settings.operationsFile, {
        builtIns: config.development || localSandbox,
      });
    } catch (err) {
      if (!(err instanceof IntegrationError) || err.code !== 'imports_disabled') throw err;
      return {
        state: 'warn',
        found:
          'imports are off: IMPORT_OPERATIONS_FILE is not set (the built-in operations are the sandbox’s, loaded only in development)',
        action:
          'To allow write-back, name the tenant’s mutations in a file set as IMPORT_OPERATIONS_FILE (docs/import.md; `tenant-integrations discover` proposes them).',
      };
    }
    const { introspect } = await import('../catalog/introspect');
    const schema = await introspect(access.graphql, { abortSignal: signal }).catch((err: unknown) => {
      if (err instanceof IntegrationError && err.code === 'introspection_refused') return undefined;
      throw err;
    });
    const misfits = schema
      ? [...operations.values()].flatMap((o) =>
          schemaProblems(o, schema)
            .slice(0, 1)
            .map((p) => `${o.name}: ${p}`),
        )
      : [];
    const names = [...operations.keys()].join(', ');
    if (misfits.length)
      return {
        state: 'fail',
        found: `operations that do not fit the tenant's schema — ${misfits.join('; ')}`,
        action: settings.operationsFile
          ? 'Fix those operations in IMPORT_OPERATIONS_FILE (`tenant-integrations discover` lists the tenant’s mutations).'
          : 'Write the tenant’s mutations in a file named by IMPORT_OPERATIONS_FILE (docs/import.md): the built-in ones are the sandbox’s.',
      };
    if (embeddedSandbox)
      return {
        ...LASTING_SESSION,
        found: `${names} ${schema ? 'fit the schema' : 'parse (introspection refused: not checked against the schema)'}; an embedded sandbox has no admin session to run them`,
      };
    const session = await access.delegated.status();
    if (session?.state !== 'connected')
      return {
        state: 'warn',
        found: `${names} ${schema ? 'fit the schema' : 'parse (introspection refused: not checked against the schema)'}; no admin session to run them`,
        action:
          'Sign in on the admin page (/api/manage) or with tenant-integrations login before posting imports.',
      };
    return {
      state: schema ? 'ok' : 'warn',
      found: `${names} ${schema ? 'fit the tenant’s schema' : 'parse (introspection refused: not checked against the schema)'}; run as ${session.username}`,
    };
  },
};
