import type { CommandHelp } from './args';

/**
 * Every command's help, apart from the commands: `--help` and `<command> --help` load this file and node:util, not
 * the app (configuration, zod, the GraphQL client, the Azure SDKs — ~55 MB of RSS before this split).
 */

export const DEV_HELP: CommandHelp = {
  usage: 'dev [--port N] [--json]',
  summary:
    'Runs the whole local stack (`npm start`): the sandbox, Azurite and the functions app, until Ctrl-C.\n' +
    'Other commands in this folder (login, sync, export) then use its sandbox and storage.',
  options: [
    ['--port N', 'port of the functions app (default 7071; 0 for a free one)'],
    ['--json', 'print one JSON line (apiBaseUrl, functionKey, adminKey, sandbox) instead of the banner'],
  ],
};

export const SANDBOX_HELP: CommandHelp = {
  usage:
    'sandbox [--port N] [--host H] [--tenant T] [--records N] [--seed S] [--schema default|varied|odd] [--no-introspection] [--no-m2m] [--limits complexity=N,rate=R]',
  summary:
    'Starts the local tenant service (identity provider, GraphQL, portal, test hooks) on its own.\n' +
    'When ready it prints one JSON line (baseUrl, authUrl, tenant, adminUsername, clientId, clientSecret) and\n' +
    "stores the demo credential's secret in the local secret file; Ctrl-C stops it.",
  options: [
    ['--port N', 'port to listen on (default: a free one)'],
    ['--host H', 'address to listen on (default 127.0.0.1)'],
    ['--tenant T', 'tenant (realm) name (default acme)'],
    ['--records N', 'records seeded per collection (default 120)'],
    ['--seed S', 'seed for the generated data, so runs repeat'],
    [
      '--schema NAME',
      'default (six Relay connections); varied: offset and page paging, other keys; odd: a reference ID beside the key, a fan-out, a type without fields (docs/sandbox.md)',
    ],
    ['--no-introspection', 'refuse introspection, as many production servers do'],
    ['--no-m2m', 'the tenant has not enabled M2M credentials (no API Credentials page)'],
    [
      '--limits L',
      'limits enforced unannounced: complexity=N (a query-cost ceiling), rate=R (requests a second per credential, 429 past it); e.g. complexity=400,rate=8',
    ],
  ],
  notes:
    'A running `npm start` stack keeps its own sandbox and its own secret name: starting this one does not\n' +
    'change it. Point commands at this sandbox with the TENANT_* settings from the JSON line.',
};

export const LOGIN_HELP: CommandHelp = {
  usage: 'login [--no-qr] [--json]',
  summary:
    'Signs the admin in with the device flow in this terminal (code, link, QR) and stores the delegated\n' +
    "session, as the admin page does. Uses the configured tenant, else the running local stack's sandbox.",
  options: [
    ['--no-qr', 'do not draw the QR code (it is drawn only on a terminal)'],
    ['--json', 'one JSON line on stdout when the code is ready and one with the outcome; no QR code'],
  ],
  notes: 'Exit codes: 0 signed in, 1 failed, 2 usage or set-up, 3 denied, 4 expired, 130 cancelled.',
};

export const DISCOVER_HELP: CommandHelp = {
  usage: 'discover [--out FILE] [--operations FILE] [--stored] [--json]',
  summary:
    "Reads the tenant's schema (introspection, with the M2M credential) and proposes a catalog: one stream per\n" +
    'collection, however it pages, with its key and every field the credential can read. `--out` writes it in the\n' +
    'SYNC_STREAMS_FILE format, for editing.',
  options: [
    ['--out FILE', 'write the catalog there (the SYNC_STREAMS_FILE format)'],
    [
      '--operations FILE',
      "write the tenant's mutations there as import operations (the IMPORT_OPERATIONS_FILE format), to keep those imports may run",
    ],
    ['--stored', 'show the catalog the sync stored (what runs read when SYNC_STREAMS_FILE is unset) instead'],
    ['--json', 'print the catalog and the findings as JSON on stdout'],
  ],
  notes:
    'Without SYNC_STREAMS_FILE the first sync discovers the catalog itself and stores it; later runs read the\n' +
    'same fields until told otherwise (docs/sync.md, "First contact with your tenant"). Exit codes: 0 done,\n' +
    '2 set-up problem (introspection refused: write SYNC_STREAMS_FILE by hand).',
};

export const SYNC_HELP: CommandHelp = {
  usage:
    'sync [--streams a,b] [--sink blob|webhook|postgres|delta[:PATH]|dir:PATH[,…]] [--full-pass | --full] [--json]',
  summary:
    "Runs one sync with the timer's own code: reads every stream, compares it with the last run and writes\n" +
    'the changes (created, updated, deleted) to the sinks. State lives in .local/sync-state/, apart from the\n' +
    "deployed app's; a run that fails part-way is resumed by the next `sync`.",
  options: [
    ['--streams a,b', 'streams to sync (default SYNC_STREAMS, else all)'],
    [
      '--sink SPEC',
      'blob, webhook, postgres, delta[:PATH] and/or dir:PATH, comma-separated (default dir:.local/sync-out)',
    ],
    ['--full-pass', 'every stream reads everything this run (incremental ones too), and reports deletions'],
    ['--full', 'start over: the last run is ignored, every record is reported as created'],
    ['--json', 'print a JSON summary with per-stream counts on stdout'],
  ],
  notes: 'Exit codes: 0 every stream synced, 1 the run is incomplete, 2 usage or set-up problem.',
};

export const ERASE_HELP: CommandHelp = {
  usage: 'erase --stream S --key K [--sink blob|postgres|delta[:PATH]|dir:PATH[,…]] [--by NAME] [--json]',
  summary:
    'Removes one record from the sinks named: its current row and every change of it, in every run they\n' +
    'keep (docs/personal-data.md). A run in the history: who, when, which key, where; never a value.',
  options: [
    ['--stream S', 'the stream the record is in'],
    ['--key K', "the record's key as the changes carry it (`id`; a composite key is its JSON array)"],
    ['--sink SPEC', 'the sinks to erase it from, as `sync --sink` (default dir:.local/sync-out)'],
    ['--by NAME', 'who asked for it, for the record (default the user running the command)'],
    ['--json', 'print the erasure record on stdout'],
  ],
  notes:
    'Exit codes: 0 erased wherever the record was kept, 1 a sink sent it where the app cannot reach (a webhook\n' +
    'receiver: erase it there), 2 usage or set-up problem.',
};

export const EXPORT_HELP: CommandHelp = {
  usage: 'export [--streams a,b] [--format ndjson|csv|json|parquet] [--gzip] --out DIR',
  summary:
    "Runs one export with the webhook's own code into a local folder: one file per stream and a\n" +
    "manifest.json with each file's record count, bytes and sha256. Files appear only when complete.",
  options: [
    ['--streams a,b', 'streams to export (default: all)'],
    ['--format F', 'ndjson (default), csv, json or parquet (snappy inside: no --gzip)'],
    ['--gzip', 'gzip each file (.gz)'],
    ['--out DIR', 'the folder to write to (required; created when missing)'],
  ],
};

export const IMPORT_HELP: CommandHelp = {
  usage: 'import --operation NAME --file items.ndjson [--json]',
  summary:
    'Applies an allow-listed mutation to each item of a file with the stored admin session (the code of\n' +
    'POST /api/imports): every item checked first, then a result per item. Needs `tenant-integrations login`\n' +
    'against a configured tenant or the running `npm start` stack (not an embedded sandbox).',
  options: [
    ['--operation NAME', 'an operation of IMPORT_OPERATIONS_FILE (default: updateKpi, updateControl)'],
    ['--file PATH', 'one item per line: {"key": "…", "variables": {…}}'],
    ['--json', 'print the counts and every result as one JSON document'],
  ],
};

export const SECRETS_HELP: CommandHelp = {
  usage: 'secrets set NAME',
  summary:
    'Stores a secret (read from stdin) in the secret store in use: Key Vault, or the local secret file.',
  options: [['NAME', 'the secret name: 1-127 letters, digits and dashes (Key Vault rules)']],
  notes:
    'On a terminal the value is read without echo (type or paste it, then Enter); otherwise stdin is read\n' +
    'to its end, e.g. `tenant-integrations secrets set tenant-client-secret < secret.txt`.',
};

export const DOCTOR_HELP: CommandHelp = {
  usage: 'doctor [--json]',
  summary:
    'Checks the set-up, in order: configuration, secret store and the client secret, identity provider,\n' +
    'client credentials, GraphQL and the tenant name, the read-only credential, storage, the delegated\n' +
    'session, the sinks. Each check says ok, warn or fail, what it found, and the one action that fixes it.\n' +
    'The deployed app runs the same checks with its own identity at GET /api/manage/doctor.',
  options: [['--json', 'print {"ok", "checks": [{name, state, found, action}]} on stdout']],
  notes: 'Exit codes: 0 nothing failed (warnings allowed), 1 a check failed. Never prints a secret or token.',
};

export const SCHEDULE_HELP: CommandHelp = {
  usage: 'schedule "<ncrontab>" [--from ISO] [--count N]',
  summary:
    'Prints the next runs of a timer schedule (SYNC_SCHEDULE) in UTC ISO 8601, one a line, with the meaning\n' +
    'Azure’s timer trigger gives it (NCrontab: six fields, seconds first; the day of the month AND the day of the\n' +
    'week must both match — "0 0 0 13 * 5" is Friday the 13th).',
  options: [
    ['--from ISO', 'count from this time instead of now (e.g. 2026-01-01T00:00:00Z)'],
    ['--count N', 'how many runs (1–1000, default 5)'],
  ],
};
