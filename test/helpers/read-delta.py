"""An independent reader for the tests: delta-rs (the `deltalake` package), in its own Python process.

Usage: read-delta.py TABLE_URI [VERSION | optimize]. TABLE_URI is a folder, or az://CONTAINER/PATH with AZURITE_BLOB_STORAGE_URL
set (the emulator's account). Prints the table as JSON: version, schema, rows (sorted by their first column), files,
and each version's operation from the history.
"""
import json
import os
import sys

from deltalake import DeltaTable

uri = sys.argv[1]
# "optimize": compact the table's files as another engine would (delta-rs' OPTIMIZE), then read it.
optimize = len(sys.argv) > 2 and sys.argv[2] == "optimize"
version = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2] not in ("latest", "optimize") else None
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
data = table.to_pyarrow_table()
rows = data.to_pylist()
if rows:
    first = data.schema.names[0]
    rows.sort(key=lambda r: (r[first] is None, str(r[first])))
sys.stdout.write(
    json.dumps(
        {
            "version": table.version(),
            "schema": [[f.name, str(f.type)] for f in data.schema],
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
