import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAccessLayer } from '../shared/access';
import { ExportStorage } from '../shared/exports/storage';
import { writeSlice } from '../shared/exports/slices';
import { blobService } from '../shared/state/blob-service';
import { resolveStreams } from '../sandbox/streams';
import { sandboxConfig } from './sandbox-config';

/**
 * One export of one stream to Blob Storage (Azurite) in a fresh process — the export activity's own code —
 * so its peak RSS is its own. Prints one JSON line.
 */
interface Args {
  baseUrl: string;
  authUrl: string;
  tenant: string;
  clientId: string;
  clientSecret: string;
  storage: string;
  stream: string;
  format: 'ndjson' | 'csv' | 'json' | 'parquet';
  gzip: boolean;
}

async function main() {
  const a = JSON.parse(process.argv[2]) as Args;
  const dir = mkdtempSync(join(tmpdir(), 'ti-bench-export-'));
  try {
    const config = await sandboxConfig(a, dir, { AzureWebJobsStorage: a.storage });
    const [stream] = resolveStreams({ select: [a.stream] });
    const storage = new ExportStorage(blobService(config), () => blobService(config));
    const started = process.hrtime.bigint();
    // As the export activity runs it: one slice (its state looked for first), with the default slice's deadline.
    const outcome = await writeSlice(
      storage,
      createAccessLayer(config).graphql,
      stream,
      { id: `bench-${process.pid}`, format: a.format, gzip: a.gzip, slice: 0 },
      { deadlineMs: Date.now() + config.activitySliceSeconds * 1000 },
    );
    if (!('done' in outcome)) throw new Error('the bench export took more than one slice');
    const file = outcome.done;
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    process.stdout.write(
      `${JSON.stringify({ records: file.records, bytes: file.bytes, ms, peakRssMb: process.resourceUsage().maxRSS / 1024 })}\n`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: Error) => {
  process.stderr.write(`${err.message}\n`);
  process.exit(1);
});
