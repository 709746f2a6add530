/*
 * The import body's bounds, checked on its text in one pass before anything parses it: JSON.parse, zod and the
 * variables' checks cost time and memory in proportion to what a body holds, and a hostile body of 8 MiB (one item
 * of half a million undeclared variables) cost seconds of CPU and hundreds of MB before its 400 (docs/import.md,
 * "Bad input"). The scan allocates nothing per character; where the text is not JSON it says nothing, and the parse
 * that follows names what is wrong.
 */

export interface BodyBounds {
  /** IMPORTS_MAX_ITEMS. */
  maxItems: number;
  /** The longest item, in UTF-8 bytes of its JSON text. */
  maxItemBytes: number;
  /** The deepest nesting of arrays and objects anywhere in the body. */
  maxDepth: number;
  /** The most variables any allowed operation declares (how many names of an item's variables are kept). */
  maxKeptNames?: number;
  /**
   * The variables an item may carry for the operation the body names (undefined where the text names none): those
   * it declares; where it names one not on the allow-list, as many as any allowed operation declares (no names).
   */
  declaredVariables: (
    operation: string | undefined,
  ) => { count: number; names?: ReadonlySet<string> } | undefined;
}

/** An item's JSON text may be at most this long: generous for a mutation's variables, small beside a body. */
export const MAX_ITEM_BYTES = 8 * 1024;
/** Nesting deeper than this is refused: no mutation's variables need it, and deep values make recursion costly. */
export const MAX_DEPTH = 32;

const QUOTE = 34;
const BACKSLASH = 92;
const OPEN_OBJECT = 123;
const CLOSE_OBJECT = 125;
const OPEN_ARRAY = 91;
const CLOSE_ARRAY = 93;
const COMMA = 44;
const COLON = 58;

/** UTF-8 bytes of the code unit at `i` (a surrogate pair's two units count two each: four in all). */
const bytesOf = (c: number) => (c < 0x80 ? 1 : c < 0x800 || (c >= 0xd800 && c <= 0xdfff) ? 2 : 3);

/**
 * A short key as JSON.parse reads it: `"it\u0065ms"` is `items`. Only keys with an escape are decoded, and only short
 * ones (a key the bounds look at is short, and escapes only lengthen its text); an escape JSON does not know is left
 * as written, for the parse to refuse.
 */
function keyOf(text: string, start: number, end: number, escaped: boolean): string {
  const raw = text.slice(start, end);
  if (!escaped) return raw;
  try {
    return JSON.parse(`"${raw}"`) as string;
  } catch {
    return raw;
  }
}

/** The keys whose values the bounds read: given twice, JSON.parse would keep the last, which the scan did not read. */
const BODY_KEYS = new Set(['items', 'operation']);

/**
 * What is wrong with the body's shape beyond its bounds — too many items, an item too long, nesting too deep, more
 * variables in an item than its operation declares — at most a few problems, each naming where. Empty: within them.
 */
export function boundsProblems(text: string, bounds: BodyBounds): string[] {
  // Whether the container open at each depth is an object. Depth 1 is the body, 2 its `items`, 3 an item, 4 the
  // item's `variables` — where those keys lead there.
  const isObject: boolean[] = [];
  let depth = 0;
  let expectKey = false;
  let key = ''; // the last key read at depth 1 or 3 (short ones only: the keys that matter are short)
  let inItems = false; // inside the body's `items` array (depth 2)
  let itemsSeen = false;
  let expectItem = false;
  let items = 0;
  let inItem = false; // inside an item that is an object or array (depth 3 and below)
  let itemBytes = 0;
  let variablesDepth = -1;
  let variables = 0;
  let mostVariables = 0;
  let mostVariablesAt = -1;
  // The first few variable names of each item, kept only until one more than any operation declares: where an item
  // has more than its operation declares, one of those is not declared, and the answer names it.
  const keepNames = (bounds.maxKeptNames ?? 16) + 1;
  let names: string[] = [];
  let mostNames: string[] = [];
  let operation: string | undefined;
  // The body's keys that matter, and each item's `variables`, as read so far: a second one is refused.
  const bodyKeys = new Set<string>();
  let itemHasVariables = false;
  const problems: string[] = [];
  const n = text.length;
  const item = () => {
    expectItem = false;
    if (++items > bounds.maxItems)
      problems.push(`items: at most ${bounds.maxItems} items (IMPORTS_MAX_ITEMS)`);
  };
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 32 || c === 10 || c === 13 || c === 9) {
      if (inItem) itemBytes++;
      continue;
    }
    if (expectItem && c !== CLOSE_ARRAY) {
      item();
      if (problems.length) return problems;
    }
    if (inItem) itemBytes += bytesOf(c);
    if (c === QUOTE) {
      const start = i + 1;
      let escaped = false;
      // To the closing quote, past escapes.
      for (i++; i < n; i++) {
        const d = text.charCodeAt(i);
        if (inItem) itemBytes += bytesOf(d);
        if (d === QUOTE) break;
        if (d === BACKSLASH) {
          escaped = true;
          if (++i < n && inItem) itemBytes += bytesOf(text.charCodeAt(i));
        }
      }
      const short = i - start <= 64;
      if (expectKey) {
        if (depth === variablesDepth && ++variables <= keepNames && short)
          names.push(keyOf(text, start, i, escaped));
        key = (depth === 1 || depth === 3) && short ? keyOf(text, start, i, escaped) : '';
        if (depth === 1 && BODY_KEYS.has(key)) {
          if (bodyKeys.has(key)) return [`body: "${key}" given twice`];
          bodyKeys.add(key);
        } else if (depth === 3 && inItem && key === 'variables') {
          if (itemHasVariables) return [`items.${items - 1}: "variables" given twice`];
          itemHasVariables = true;
        }
      } else if (depth === 1 && key === 'operation' && short) operation = keyOf(text, start, i, escaped);
      continue;
    }
    if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      const object = c === OPEN_OBJECT;
      if (depth === 1 && key === 'items' && !object && !itemsSeen) {
        inItems = itemsSeen = expectItem = true;
      } else if (depth === 2 && inItems) {
        inItem = true;
        itemHasVariables = false;
        itemBytes = 1;
      } else if (depth === 3 && inItem && key === 'variables' && object) {
        variablesDepth = 4;
        variables = 0;
        names = [];
      }
      depth++;
      if (depth > bounds.maxDepth) return [`body: nested deeper than ${bounds.maxDepth} levels`];
      isObject[depth] = object;
      expectKey = object;
      continue;
    }
    if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      if (depth === variablesDepth) {
        if (variables > mostVariables) {
          mostVariables = variables;
          mostVariablesAt = items - 1;
          mostNames = names;
        }
        variablesDepth = -1;
      }
      if (depth === 3 && inItem) {
        inItem = false;
        if (itemBytes > bounds.maxItemBytes) {
          problems.push(
            `items.${items - 1}: ${itemBytes} bytes; an item may be at most ${bounds.maxItemBytes}`,
          );
          if (problems.length >= 3) return problems;
        }
      }
      if (depth === 2 && inItems) inItems = expectItem = false;
      depth--;
      expectKey = false;
      continue;
    }
    if (c === COMMA) {
      expectKey = isObject[depth] === true;
      if (depth === 2 && inItems) expectItem = true;
    } else if (c === COLON) expectKey = false;
  }
  const declared = bounds.declaredVariables(operation);
  if (declared !== undefined && mostVariables > declared.count) {
    const where = `items.${mostVariablesAt}.variables`;
    const named = declared.names;
    const stray = named && mostNames.find((v) => !named.has(v));
    problems.push(
      stray !== undefined && named
        ? `${where}: $${stray}: not a variable of ${operation} (it declares ${[...named].map((d) => `$${d}`).join(', ') || 'none'}; ${mostVariables} given)`
        : `${where}: ${mostVariables} variables; the operation declares ${declared.count}`,
    );
  }
  return problems;
}
