import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { IntegrationError } from '../shared/errors';
import { formatHelp, UsageError, type CommandHelp } from './args';
import {
  DEV_HELP,
  DISCOVER_HELP,
  DOCTOR_HELP,
  ERASE_HELP,
  EXPORT_HELP,
  SCHEDULE_HELP,
  IMPORT_HELP,
  LOGIN_HELP,
  SANDBOX_HELP,
  SECRETS_HELP,
  SYNC_HELP,
} from './help';

type Run = (args: string[]) => Promise<number>;

// A command's module loads only when that command runs: help and the other commands never load the app.
const COMMANDS: Record<string, { help: CommandHelp; run: Run }> = {
  dev: { help: DEV_HELP, run: (args) => import('./dev').then((m) => m.devCommand(args)) },
  sandbox: { help: SANDBOX_HELP, run: (args) => import('./sandbox').then((m) => m.sandboxCommand(args)) },
  login: { help: LOGIN_HELP, run: (args) => import('./login').then((m) => m.loginCommand(args)) },
  discover: { help: DISCOVER_HELP, run: (args) => import('./discover').then((m) => m.discoverCommand(args)) },
  sync: { help: SYNC_HELP, run: (args) => import('./sync').then((m) => m.syncCommand(args)) },
  erase: { help: ERASE_HELP, run: (args) => import('./erase').then((m) => m.eraseCommand(args)) },
  export: { help: EXPORT_HELP, run: (args) => import('./export').then((m) => m.exportCommand(args)) },
  import: { help: IMPORT_HELP, run: (args) => import('./import').then((m) => m.importCommand(args)) },
  secrets: { help: SECRETS_HELP, run: (args) => import('./secrets').then((m) => m.secretsCommand(args)) },
  doctor: { help: DOCTOR_HELP, run: (args) => import('./doctor').then((m) => m.doctorCommand(args)) },
  schedule: {
    help: SCHEDULE_HELP,
    run: (args) => import('./schedule').then((m) => m.scheduleCommand(args)),
  },
};

/** Set-up problems a person fixes before running again: exit 2 like a usage mistake, not 1 (a failed run). */
const SETUP_CODES = new Set([
  'config_invalid',
  'secret_not_found',
  'credential_rejected',
  'introspection_refused',
  'catalog_invalid',
  'admin_login_required',
  'operations_invalid',
]);

export const version = (): string =>
  (JSON.parse(readFileSync(resolve(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string })
    .version;

const usage = () => {
  const width = Math.max(...Object.values(COMMANDS).map((c) => c.help.usage.length));
  return [
    'usage: tenant-integrations <command> [options]',
    '',
    ...Object.values(COMMANDS).map(
      (c) => `  ${c.help.usage.padEnd(width)}  ${c.help.summary.split('\n')[0]}`,
    ),
    '',
    '`tenant-integrations <command> --help` describes a command; `--version` prints the version.',
    '',
  ].join('\n');
};

const wantsHelp = (args: string[]) => args.some((a) => a === '--help' || a === '-h');

/** Exit codes: 0 done, 1 failed, 2 usage or set-up mistake (`login` adds 3 denied, 4 expired, 130 cancelled). */
export async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    const topic = name === 'help' && args[0] ? COMMANDS[args[0]] : undefined;
    process.stdout.write(topic ? formatHelp(topic.help) : usage());
    return name ? 0 : 2;
  }
  if (name === '--version' || name === '-V' || name === 'version') {
    process.stdout.write(`tenant-integrations ${version()} (Node.js ${process.versions.node})\n`);
    return 0;
  }
  const command = COMMANDS[name];
  if (!command) {
    process.stderr.write(`tenant-integrations: unknown command "${name}"\n${usage()}`);
    return 2;
  }
  if (wantsHelp(args)) {
    process.stdout.write(formatHelp(command.help));
    return 0;
  }
  try {
    return await command.run(args);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(
        `tenant-integrations ${name}: ${err.message}\nusage: tenant-integrations ${command.help.usage}\n`,
      );
      return 2;
    }
    if (err instanceof IntegrationError) {
      process.stderr.write(`tenant-integrations ${name}: ${err.message}\n`);
      return SETUP_CODES.has(err.code) ? 2 : 1;
    }
    process.stderr.write(`tenant-integrations ${name}: ${(err as Error).message}\n`);
    return 1;
  }
}
