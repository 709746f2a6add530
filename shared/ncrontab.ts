/**
 * NCRONTAB with seconds (`{second} {minute} {hour} {day} {month} {day-of-week}`), as Azure Functions timer
 * triggers use it, in UTC. Supports `*`, lists, ranges, steps and month/day names.
 */
const FIELDS = [
  { name: 'second', min: 0, max: 59 },
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12 },
  { name: 'day-of-week', min: 0, max: 6 },
] as const;
const NAMES: Record<string, number> = {
  JAN: 1,
  FEB: 2,
  MAR: 3,
  APR: 4,
  MAY: 5,
  JUN: 6,
  JUL: 7,
  AUG: 8,
  SEP: 9,
  OCT: 10,
  NOV: 11,
  DEC: 12,
  SUN: 0,
  MON: 1,
  TUE: 2,
  WED: 3,
  THU: 4,
  FRI: 5,
  SAT: 6,
};

export interface Schedule {
  sets: Array<Set<number>>;
  dayRestricted: boolean;
  weekdayRestricted: boolean;
}

function value(token: string, field: (typeof FIELDS)[number]): number {
  const n = /^\d+$/.test(token) ? Number(token) : NAMES[token.toUpperCase()];
  // Sunday may be written 7.
  const v = field.name === 'day-of-week' && n === 7 ? 0 : n;
  if (v === undefined || v < field.min || v > field.max)
    throw new Error(`${field.name}: "${token}" is out of range ${field.min}-${field.max}`);
  return v;
}

export function parseNcrontab(expression: string): Schedule {
  const parts = expression.trim().split(/\s+/);
  if (parts.length !== 6)
    throw new Error(`"${expression}" must have six fields: second minute hour day month day-of-week`);
  const sets = parts.map((part, i) => {
    const field = FIELDS[i];
    const set = new Set<number>();
    for (const item of part.split(',')) {
      const [range, stepText] = item.split('/');
      const step = stepText === undefined ? 1 : Number(stepText);
      if (!Number.isInteger(step) || step < 1) throw new Error(`${field.name}: bad step in "${item}"`);
      let lo: number;
      let hi: number;
      if (range === '*') [lo, hi] = [field.min, field.max];
      else if (range.includes('-'))
        [lo, hi] = range.split('-').map((t) => value(t, field)) as [number, number];
      else [lo, hi] = [value(range, field), stepText === undefined ? value(range, field) : field.max];
      if (lo > hi) throw new Error(`${field.name}: empty range "${item}"`);
      for (let v = lo; v <= hi; v += step) set.add(v);
    }
    return set;
  });
  return { sets, dayRestricted: parts[3] !== '*', weekdayRestricted: parts[5] !== '*' };
}

function dayMatches(s: Schedule, d: Date): boolean {
  const dom = s.sets[3].has(d.getUTCDate());
  const dow = s.sets[5].has(d.getUTCDay());
  // Cron rule: when both are restricted, either may match.
  if (s.dayRestricted && s.weekdayRestricted) return dom || dow;
  return dom && dow;
}

/** The first occurrence strictly after `afterMs`. */
export function nextOccurrence(s: Schedule, afterMs: number): number {
  const d = new Date(Math.floor(afterMs / 1000) * 1000 + 1000);
  const limit = afterMs + 5 * 366 * 86_400_000;
  while (d.getTime() < limit) {
    if (!s.sets[4].has(d.getUTCMonth() + 1)) {
      d.setUTCMonth(d.getUTCMonth() + 1, 1);
      d.setUTCHours(0, 0, 0);
    } else if (!dayMatches(s, d)) {
      d.setUTCDate(d.getUTCDate() + 1);
      d.setUTCHours(0, 0, 0);
    } else if (!s.sets[2].has(d.getUTCHours())) {
      d.setUTCHours(d.getUTCHours() + 1, 0, 0);
    } else if (!s.sets[1].has(d.getUTCMinutes())) {
      d.setUTCMinutes(d.getUTCMinutes() + 1, 0);
    } else if (!s.sets[0].has(d.getUTCSeconds())) {
      d.setUTCSeconds(d.getUTCSeconds() + 1);
    } else {
      return d.getTime();
    }
  }
  throw new Error('the schedule never fires');
}
