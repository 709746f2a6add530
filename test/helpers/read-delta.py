"""An independent reader for the tests: delta-rs (the `deltalake` package), in its own Python process.

Usage: read-delta.py TABLE_URI [VERSION | optimize | optimize-count]. `optimize-count` compacts the table and prints its
rows' count instead of its rows (a table of 200 000 rows). TABLE_URI is a folder, or az://CONTAINER/PATH with AZURITE_BLOB_STORAGE_URL
set (the emulator's account). Prints the table as JSON: version, schema, rows (sorted by their first column), files,
and each version's operation from the history.
"""
import json
import os
import sys

from deltalake import DeltaTable, QueryBuilder

uri = sys.argv[1]
# "optimize": compact the table's files as another engine would (delta-rs' OPTIMIZE), then read it.
mode = sys.argv[2] if len(sys.argv) > 2 else "latest"
optimize = mode in ("optimize", "optimize-count")
version = int(mode) if mode not in ("latest", "optimize", "optimize-count") else None
options = None
if uri.startswith("az://"):
    options = {
        "azure_storage_use_emulator": "true",
        "azure_storage_account_name": "devstoreaccount1",
        "azure_storage_account_key": "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==",
        "azure_allow_http": "true",
    }
table = DeltaTable(uri, version=version, storage_options=options)
if optimize:
    table.optimize.compact()
    table = DeltaTable(uri, storage_options=options)
# Through delta-rs' query engine (DataFusion on delta-kernel): it applies deletion vectors, which to_pyarrow_table
# refuses to read.
import pyarrow

data = pyarrow.table(QueryBuilder().register("t", table).execute("SELECT * FROM t").read_all())
rows = data.to_pylist() if mode != "optimize-count" else []
if mode == "optimize-count":
    sys.stdout.write(json.dumps({"version": table.version(), "count": data.num_rows, "files": sorted(table.file_uris()), "rows": []}))
    sys.stdout.flush()
    os._exit(0)
if rows:
    first = data.schema.names[0]
    rows.sort(key=lambda r: (r[first] is None, str(r[first])))
sys.stdout.write(
    json.dumps(
        {
            "version": table.version(),
            # DataFusion reads text as string_view: the table's type is string.
            "schema": [[f.name, "string" if str(f.type) == "string_view" else str(f.type)] for f in data.schema],
            "rows": rows,
            "files": sorted(table.file_uris()),
            "history": [
                {"version": h.get("version"), "operation": h.get("operation")} for h in table.history()
            ],
        },
        default=str,
    )
)
sys.stdout.flush()
# Straight out: delta-rs' runtime threads can abort the interpreter's ordinary exit ("terminate called without an
# active exception") after the answer is written.
os._exit(0)
