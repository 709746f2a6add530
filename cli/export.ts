import { createWriteStream } from 'node:fs';
import { hashes } from '../shared/personal/policy';
import { hashKeyOf } from '../shared/secrets';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { createAccessLayer } from '../shared/access';
import { EXPORT_FORMATS, extensionOf, type ExportFormat } from '../shared/exports/file';
import { writeExportStream, type ExportFile } from '../shared/exports/write';
import { catalogStreams } from '../shared/catalog';
import { ConfigError } from '../shared/errors';
import { selectStreams } from '../shared/streams';
import { CATALOG_SETTINGS } from '../shared/catalog/settings';
import { partOf } from '../shared/config';
import { FileCatalogStore } from '../shared/state/catalog-store';
import { localStateFolder } from '../shared/state/local';
import { parse, UsageError } from './args';
import { describeTarget, resolveTenant } from './context';

/**
 * `tenant-integrations export`: the export's own code to a local folder — one file per stream and a
 * `manifest.json` with each file's record count, bytes and sha256. Files appear only when complete.
 */
export async function exportCommand(args: string[]): Promise<number> {
  const { values } = parse(args, {
    streams: { type: 'string' },
    format: { type: 'string' },
    gzip: { type: 'boolean' },
    out: { type: 'string' },
  });
  if (!values.out) throw new UsageError('--out DIR is required (where the files and manifest.json go)');
  const format = (values.format ?? 'ndjson') as ExportFormat;
  if (!EXPORT_FORMATS.includes(format))
    throw new UsageError(`--format must be one of ${EXPORT_FORMATS.join(', ')}`);
  if (format === 'parquet' && values.gzip)
    throw new UsageError('--gzip does not apply to parquet: its files are compressed inside (snappy)');
  const target = await resolveTenant();
  try {
    const { config } = target;
    const access = createAccessLayer(config);
    describeTarget(target);
    await access.m2m.getToken(); // a set-up problem is said once, before any file is started
    const catalog = await catalogStreams({
      graphql: access.graphql,
      state: new FileCatalogStore(localStateFolder(config)),
      tenant: config.tenant.name,
      streamsFile: partOf(config, CATALOG_SETTINGS).streamsFile,
      maxStreams: partOf(config, CATALOG_SETTINGS).maxStreams,
      personal: partOf(config, CATALOG_SETTINGS).personal.chosen,
      now: Date.now,
    });
    let streams;
    try {
      streams = selectStreams(catalog.streams, values.streams?.split(',').filter(Boolean), {
        from: '--streams',
      });
    } catch (err) {
      if (err instanceof ConfigError) throw new UsageError(err.problems.join('; '));
      throw err;
    }
    const dir = resolve(values.out);
    await mkdir(dir, { recursive: true });
    const files: Array<ExportFile & { file: string }> = [];
    const hashKey = hashKeyOf(
      access.sessionSecrets,
      partOf(config, CATALOG_SETTINGS).personal.hashSecretName,
    );
    for (const stream of streams) {
      const file = `${stream.name}.${extensionOf(format, Boolean(values.gzip))}`;
      const partial = join(dir, `.${file}.partial`);
      try {
        const result = await writeExportStream(access.graphql, stream, createWriteStream(partial), {
          format,
          gzip: values.gzip,
          hasher: hashes(stream) ? await hashKey() : undefined,
        });
        await rename(partial, join(dir, file));
        files.push({ ...result, file });
        process.stderr.write(`✔ ${stream.name}: ${result.records} records → ${file}\n`);
      } catch (err) {
        await rm(partial, { force: true });
        throw err;
      }
    }
    await writeFile(
      join(dir, 'manifest.json'),
      `${JSON.stringify({ tenant: config.tenant.name, format, gzip: Boolean(values.gzip), files }, null, 2)}\n`,
    );
    return 0;
  } finally {
    await target.close();
  }
}
