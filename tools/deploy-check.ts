import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { deployRefusal, stagedBackendOf } from './durable-backend';

/**
 * azd's `predeploy` hook for the app (azure.yaml): runs after `azd provision` in `azd up`, so it sees what was just
 * provisioned, and refuses to ship a package staged for another durable backend (tools/durable-backend.ts).
 */
if (require.main === module) {
  try {
    // The staged folder (`--package DIR` for another than .deploy/, as tests stage theirs).
    const at = process.argv.indexOf('--package');
    const dir =
      at > 0 && process.argv[at + 1]
        ? resolve(process.argv[at + 1])
        : join(resolve(__dirname, '..', '..'), '.deploy');
    const host = JSON.parse(readFileSync(join(dir, 'host.json'), 'utf8')) as unknown;
    const refusal = deployRefusal(process.env, stagedBackendOf(host));
    if (refusal) throw new Error(refusal);
    process.stderr.write(`deploy: the package is for ${stagedBackendOf(host)}, as the app is provisioned\n`);
  } catch (err) {
    process.stderr.write(`deploy: ${(err as Error).message}\n`);
    process.exit(1);
  }
}
