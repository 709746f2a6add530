import { IntegrationError } from '../shared/errors';
import { UsageError } from './args';
import { DEV_USAGE, devCommand } from './dev';
import { EXPORT_USAGE, exportCommand } from './export';
import { LOGIN_USAGE, loginCommand } from './login';
import { SANDBOX_USAGE, sandboxCommand } from './sandbox';
import { SECRETS_USAGE, secretsCommand } from './secrets';
import { SYNC_USAGE, syncCommand } from './sync';

const COMMANDS: Record<string, { usage: string; run: (args: string[]) => Promise<number> }> = {
  dev: { usage: DEV_USAGE, run: devCommand },
  export: { usage: EXPORT_USAGE, run: exportCommand },
  login: { usage: LOGIN_USAGE, run: (args) => loginCommand(args) },
  sandbox: { usage: SANDBOX_USAGE, run: sandboxCommand },
  secrets: { usage: SECRETS_USAGE, run: secretsCommand },
  sync: { usage: SYNC_USAGE, run: syncCommand },
};

const usage = () =>
  `usage: tenant-integrations <command>\n\n${Object.values(COMMANDS)
    .map((c) => `  ${c.usage}`)
    .join('\n')}\n`;

/** Exit codes: 0 done, 1 failed, 2 usage or configuration mistake (`login` adds 3 denied, 4 expired, 130 cancelled). */
export async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(usage());
    return name ? 0 : 2;
  }
  const command = COMMANDS[name];
  if (!command) {
    process.stderr.write(`tenant-integrations: unknown command "${name}"\n${usage()}`);
    return 2;
  }
  try {
    return await command.run(args);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`tenant-integrations ${name}: ${err.message}\n`);
      return 2;
    }
    if (err instanceof IntegrationError) {
      process.stderr.write(`tenant-integrations ${name}: ${err.message}\n`);
      return err.code === 'CONFIG_INVALID' ? 2 : 1;
    }
    process.stderr.write(`tenant-integrations ${name}: ${(err as Error).message}\n`);
    return 1;
  }
}
