#!/usr/bin/env node
'use strict';
// Runs the compiled CLI; `npm ci` builds it (the `prepare` script), `npm run build` rebuilds it.
let main;
try {
  main = require('../dist/cli/main.js').main;
} catch (err) {
  if (err && err.code === 'MODULE_NOT_FOUND' && String(err.message).includes('dist/cli/main')) {
    console.error('tenant-integrations: not built yet. Run `npm run build` in the project folder first.');
    process.exit(1);
  }
  throw err;
}
const args = process.argv.slice(2);
// With `npm start` running, commands use its Azurite, which speaks HTTPS with a local certificate; Node
// reads extra trusted certificates only at start-up, so the command runs again with it.
// Help and the version talk to nothing: they skip this (reading the settings loads most of the app).
const helpOnly =
  !args[0] ||
  ['help', '--help', '-h', 'version', '--version', '-V'].includes(args[0]) ||
  args.includes('--help') ||
  args.includes('-h');
const ca =
  !helpOnly &&
  args[0] !== 'dev' &&
  !process.env.TENANT_INTEGRATIONS_TRUSTED &&
  require('../dist/cli/context.js').devStackCaFile();
// A sync runs with the Node flags of cli/node-flags.ts; help does not need them.
const flags = helpOnly
  ? []
  : require('../dist/cli/node-flags.js').nodeFlagsFor(args, process.execArgv, process.env.NODE_OPTIONS);
// The same command again, with the flags: Node's arguments as this process was given them, then the sync's.
const again = [...process.execArgv, ...flags, process.argv[1], ...args];
if (ca) {
  const { spawn } = require('node:child_process');
  const child = spawn(process.execPath, again, {
    stdio: 'inherit',
    env: { ...process.env, NODE_EXTRA_CA_CERTS: ca, TENANT_INTEGRATIONS_TRUSTED: '1' },
  });
  // A signal sent to this process alone (kill PID, a supervisor) reaches the command too: none is orphaned.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? (signal === 'SIGINT' ? 130 : 1)));
} else if (flags.length && typeof process.execve === 'function') {
  // Replaced by the same command with the flags (not a child beside this process: nothing is left waiting).
  // process.execve is Node 22.15+, not on Windows; without it the command runs with Node's defaults.
  process.execve(process.execPath, [process.execPath, ...again]);
} else {
  main(args).then((code) => {
    process.exitCode = code;
  });
}
