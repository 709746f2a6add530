import { createHash } from 'node:crypto';

/** The postgres sink's names: its own tables, the tenant's schema, prepared statements, quoting. */
export const SINK_PAGES_TABLE = '_sync_pages';
export const SINK_RUNS_TABLE = '_sync_runs';
export const SINK_QUARANTINE_TABLE = '_quarantine';

/**
 * A schema name from the tenant's: lower case, letters, digits and underscores. Whenever that changed the name
 * (`acme-corp`, `acme.corp` and `ACME_corp` would all be `acme_corp`) or it is too long for PostgreSQL's 63 bytes,
 * a short hash of the tenant's own name keeps tenants that share a database apart.
 */
export function defaultSchema(tenant: string): string {
  const clean = tenant.toLowerCase().replace(/[^a-z0-9_]/g, '_');
  const plain = `tenant_${clean}`;
  if (clean === tenant && plain.length <= 63) return plain;
  const hash = createHash('sha256').update(tenant).digest('hex').slice(0, 8);
  return `${plain.slice(0, 63 - 9)}_${hash}`;
}

/** A prepared statement's name: unique per (schema, stream, mode) and short, however long those are. */
export const statementName = (schema: string, stream: string, mode: string) =>
  `ti_page_${createHash('sha256').update(`${schema}\0${stream}\0${mode}`).digest('hex').slice(0, 32)}`;

export const ident = (s: string) => `"${s.replace(/"/g, '""')}"`;
export const literal = (s: string) => `'${s.replace(/'/g, "''")}'`;
