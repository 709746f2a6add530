import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { coreSplit, cpuList, idleOnly, pin } from '../../bench/cores';

const allowed = () => /Cpus_allowed_list:\s*(\S+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? '';

describe('bench core split', () => {
  it('reads taskset lists', () => {
    expect(cpuList('0,1')).toEqual([0, 1]);
    expect(cpuList('0-3,6')).toEqual([0, 1, 2, 3, 6]);
    expect(cpuList('2')).toEqual([2]);
    expect(cpuList('')).toEqual([]);
    expect(cpuList('3-1')).toEqual([]);
  });

  it('keeps the first core for the tenant, pins a process to the others, and shares them again', () => {
    const before = allowed();
    const split = coreSplit();
    if ('unsplit' in split) {
      // One core to run on: nothing to split, and the bench says why.
      expect(cpuList(before).length).toBeLessThan(2);
      return;
    }
    const cpus = cpuList(before);
    expect(split.tenant).toBe(String(cpus[0]));
    expect(cpuList(split.all)).toEqual(cpus);
    try {
      pin([process.pid], split.rest);
      expect(cpuList(allowed())).toEqual(cpus.slice(1));
    } finally {
      pin([process.pid], split.all);
    }
    expect(cpuList(allowed())).toEqual(cpus);
    expect(() => pin([undefined], split.all)).toThrow('without a pid');
  });

  it('runs a process (every thread) only when nothing else wants a core', async () => {
    const child = spawn(process.execPath, ['-e', "process.stdout.write('up'); setTimeout(() => {}, 10000)"]);
    try {
      // Once it runs JavaScript, Node's own threads (V8's platform, libuv's) exist: the policy must reach them too.
      // At 'spawn' the process may still be one thread.
      await new Promise((ok) => child.stdout.once('data', ok));
      expect(idleOnly([child.pid])).toBe(true);
      const shown = spawnSync('chrt', ['-a', '-p', String(child.pid)], { encoding: 'utf8' }).stdout;
      const policies = shown.split('\n').filter((l) => l.includes('policy'));
      expect(policies.length).toBeGreaterThan(1); // Node's own threads too
      for (const line of policies) expect(line).toContain('SCHED_IDLE');
      expect(idleOnly([undefined])).toBe(false);
    } finally {
      child.kill();
    }
  });
});
