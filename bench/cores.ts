import { spawnSync } from 'node:child_process';

/**
 * Which cores a bench's tenant gets apart from the rest. In production the tenant's service runs on its own
 * machines; here the sandbox shares the machine's cores with the bench and Azurite, and CPU spent beside the
 * single-threaded sandbox slows it (docs/benchmarks.md, "Import") — there the bench measures the rig as much as the
 * client. Apart, the sandbox has the first core this process may use and everything else the others.
 */
export interface CoreSplit {
  /** `taskset -c` lists: the tenant's core, the rest's, and all of them (to share them again). */
  tenant: string;
  rest: string;
  all: string;
}

/** A `taskset -c` list ("0-2,5") as the CPUs it names; empty when it is not one. */
export function cpuList(list: string): number[] {
  const cpus: number[] = [];
  for (const part of list.trim().split(',')) {
    if (!/^\d+(-\d+)?$/.test(part)) return [];
    const [from, to = from] = part.split('-').map(Number);
    if (to < from) return [];
    for (let c = from; c <= to; c++) cpus.push(c);
  }
  return cpus;
}

const taskset = (args: string[]) => spawnSync('taskset', args, { encoding: 'utf8' });

/** The split of this process's cores, or why there is none (no taskset, one core). */
export function coreSplit(): CoreSplit | { unsplit: string } {
  const current = taskset(['-c', '-p', String(process.pid)]);
  if (current.error || current.status !== 0) return { unsplit: 'taskset is not available' };
  const all = /:\s*([\d,-]+)\s*$/.exec(current.stdout)?.[1] ?? '';
  const cpus = cpuList(all).map(String);
  if (cpus.length < 2) return { unsplit: `one core to run on (${all || 'unknown'})` };
  return { tenant: cpus[0], rest: cpus.slice(1).join(','), all };
}

/** Puts every thread of these processes on `cpus` (threads they start later inherit it). */
export function pin(pids: Array<number | undefined>, cpus: string): void {
  for (const pid of pids) {
    if (pid === undefined) throw new Error('pin: a process without a pid');
    const done = taskset(['-a', '-c', '-p', cpus, String(pid)]);
    if (done.status !== 0) throw new Error(`taskset ${cpus} for ${pid}: ${done.stderr.trim()}`);
  }
}

/**
 * Runs these processes only when nothing else wants the CPU (SCHED_IDLE, every thread): Azurite stands in for a
 * storage account, which in production never takes the app's cores. True when set; false where chrt cannot.
 */
export function idleOnly(pids: Array<number | undefined>): boolean {
  return pids.every(
    (pid) => pid !== undefined && spawnSync('chrt', ['-a', '--idle', '-p', '0', String(pid)]).status === 0,
  );
}
