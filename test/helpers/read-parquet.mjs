// An independent reader for the tests: hyparquet (ES module, so it runs in its own Node process, outside jest).
// Prints {rowGroups, codec, columns, rows} as JSON for the file named on the command line.
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects } from 'hyparquet';

const file = await asyncBufferFromFile(process.argv[2]);
const meta = await parquetMetadataAsync(file);
const rows = await parquetReadObjects({ file });
process.stdout.write(
  JSON.stringify(
    {
      rowGroups: meta.row_groups.length,
      codec: meta.row_groups[0]?.columns[0]?.meta_data?.codec ?? null,
      columns: meta.schema
        .slice(1)
        .map((s) => ({ name: s.name, type: s.type, convertedType: s.converted_type ?? null })),
      rows,
    },
    (_k, v) => (typeof v === 'bigint' ? Number(v) : v),
  ),
);
