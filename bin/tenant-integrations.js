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
main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
