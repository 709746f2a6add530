/**
 * NCRONTAB with seconds (`{second} {minute} {hour} {day} {month} {day-of-week}`), in UTC, as Azure Functions' timer
 * trigger reads it — through NCrontab (github.com/atifaziz/NCrontab), whose meaning this module keeps, checked
 * against NCrontab's own test cases (test/unit/ncrontab.test.ts):
 * - the day-of-month **and** the day-of-week must both match (`0 0 0 13 * 5` is Friday the 13th only; classic cron
 *   would fire on every 13th and every Friday);
 * - `*`, lists, ranges (`5-1` is `1-5`), steps (`*\/n`, `a-b/n`, and `a/n` meaning `a-max/n`; a step of 0 is 1);
 * - month and day names in any case, and any prefix of them (`Jan`, `january`, `Augu`, `SEPT`);
 * - day-of-week 0–6 with Sunday 0 (7 is refused, as there).
 * The one module every part of the app asks: the local timers, the config check, the status page's next run,
 * doctor, the provision hook's interval and `tenant-integrations schedule`.
 */
const FIELDS = [
  { name: 'second', min: 0, max: 59 },
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day', min: 1, max: 31 },
  {
    name: 'month',
    min: 1,
    max: 12,
    names: [
      'January',
      'February',
      'March',
      'April',
      'May',
      'June',
      'July',
      'August',
      'September',
      'October',
      'November',
      'December',
    ],
  },
  {
    name: 'day-of-week',
    min: 0,
    max: 6,
    names: ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'],
  },
] as const;
type Field = (typeof FIELDS)[number];

export interface Schedule {
  /** The values each field allows, in FIELDS' order. */
  sets: Array<Set<number>>;
}

function value(token: string, field: Field): number {
  let v: number | undefined;
  if (/^\d+$/.test(token)) v = Number(token);
  else if ('names' in field) {
    // NCrontab takes the first name the token begins: `J` is January, `Ju` June.
    const lower = token.toLowerCase();
    const i = lower ? field.names.findIndex((n) => n.toLowerCase().startsWith(lower)) : -1;
    if (i < 0) throw new Error(`${field.name}: "${token}" is not a known name (${field.names.join(', ')})`);
    v = i + field.min;
  } else throw new Error(`${field.name}: "${token}" is not a number`);
  if (v < field.min || v > field.max)
    throw new Error(
      `${field.name}: ${v} is out of range ${field.min}-${field.max}${field.name === 'day-of-week' && v === 7 ? ' (Sunday is 0)' : ''}`,
    );
  return v;
}

function parseField(part: string, field: Field): Set<number> {
  const set = new Set<number>();
  for (const item of part.split(',')) {
    if (!item) throw new Error(`${field.name}: an empty value in "${part}"`);
    const slash = item.indexOf('/');
    const range = slash < 0 ? item : item.slice(0, slash);
    const stepText = slash < 0 ? undefined : item.slice(slash + 1);
    if (stepText !== undefined && !/^\d+$/.test(stepText))
      throw new Error(`${field.name}: bad step in "${item}"`);
    const step = Math.max(1, Number(stepText ?? 1));
    let lo: number;
    let hi: number;
    const dash = range.indexOf('-');
    if (range === '*') [lo, hi] = [field.min, field.max];
    else if (dash > 0) {
      [lo, hi] = [value(range.slice(0, dash), field), value(range.slice(dash + 1), field)];
      if (lo > hi) [lo, hi] = [hi, lo];
    } else [lo, hi] = [value(range, field), stepText === undefined ? value(range, field) : field.max];
    for (let v = lo; v <= hi; v += step) set.add(v);
  }
  return set;
}

export function parseNcrontab(expression: string): Schedule {
  const parts = expression.trim().split(/\s+/);
  if (parts.length !== 6)
    throw new Error(`"${expression}" must have six fields: second minute hour day month day-of-week`);
  return { sets: parts.map((part, i) => parseField(part, FIELDS[i])) };
}

/** How far ahead a schedule is looked for: a Gregorian calendar repeats every 400 years. */
const HORIZON_MS = 400 * 365.2425 * 86_400_000;

/** The first occurrence strictly after `afterMs`; throws when the schedule never fires (`0 0 0 30 2 *`). */
export function nextOccurrence(s: Schedule, afterMs: number): number {
  const d = new Date(Math.floor(afterMs / 1000) * 1000 + 1000);
  const limit = afterMs + HORIZON_MS;
  const [seconds, minutes, hours, days, months, weekdays] = s.sets;
  while (d.getTime() < limit) {
    if (!months.has(d.getUTCMonth() + 1)) {
      d.setUTCMonth(d.getUTCMonth() + 1, 1);
      d.setUTCHours(0, 0, 0);
    } else if (!days.has(d.getUTCDate()) || !weekdays.has(d.getUTCDay())) {
      // Both day fields must match, as NCrontab has it.
      d.setUTCDate(d.getUTCDate() + 1);
      d.setUTCHours(0, 0, 0);
    } else if (!hours.has(d.getUTCHours())) {
      d.setUTCHours(d.getUTCHours() + 1, 0, 0);
    } else if (!minutes.has(d.getUTCMinutes())) {
      d.setUTCMinutes(d.getUTCMinutes() + 1, 0);
    } else if (!seconds.has(d.getUTCSeconds())) {
      d.setUTCSeconds(d.getUTCSeconds() + 1);
    } else {
      return d.getTime();
    }
  }
  throw new Error('the schedule never fires');
}

/** The next `count` occurrences strictly after `afterMs`, in order. */
export function nextOccurrences(s: Schedule, afterMs: number, count: number): number[] {
  const out: number[] = [];
  for (let at = afterMs; out.length < count;) out.push((at = nextOccurrence(s, at)));
  return out;
}
