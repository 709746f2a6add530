import { writeReport } from './report';

/** Writes docs/reliability.md from the rows the suite recorded, and shows it. */
export default function globalTeardown(): void {
  process.stdout.write(`\n${writeReport()}\n`);
}
