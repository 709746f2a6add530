import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Just enough of Bicep to check invariants without a compiler (none can be installed here): comments
 * stripped outside strings, then resources, params and outputs with their bodies by brace matching.
 */
export interface BicepResource {
  symbol: string;
  type: string;
  apiVersion?: string;
  existing: boolean;
  condition?: string;
  /** `for … in …` of a resource loop (`= [for x in xs: {…}]`), the body being one element's. */
  loop?: string;
  body: string;
}

export interface BicepFile {
  path: string;
  text: string;
  resources: BicepResource[];
  params: Array<{ name: string; type: string; defaulted: boolean; decorators: string }>;
  outputs: Array<{ name: string; value: string }>;
  modules: Array<{ symbol: string; path: string; condition?: string; body: string }>;
}

export function stripComments(source: string): string {
  let out = '';
  for (let i = 0; i < source.length;) {
    if (source.startsWith("'''", i)) {
      const end = source.indexOf("'''", i + 3);
      out += source.slice(i, end + 3);
      i = end + 3;
    } else if (source[i] === "'") {
      let j = i + 1;
      while (j < source.length && source[j] !== "'") j += source[j] === '\\' ? 2 : 1;
      out += source.slice(i, j + 1);
      i = j + 1;
    } else if (source.startsWith('//', i)) {
      while (i < source.length && source[i] !== '\n') i++;
    } else if (source.startsWith('/*', i)) {
      i = source.indexOf('*/', i) + 2;
    } else out += source[i++];
  }
  return out;
}

/** The text between the `{` at `open` and its matching `}` (strings respected). */
export function block(text: string, open: number): string {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (c === "'") {
      i++;
      while (i < text.length && text[i] !== "'") i += text[i] === '\\' ? 2 : 1;
    } else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) return text.slice(open + 1, i);
  }
  throw new Error('unbalanced braces');
}

export function readBicep(root: string, path: string): BicepFile {
  const text = stripComments(readFileSync(join(root, path), 'utf8'));
  const resources: BicepResource[] = [];
  const re =
    /^\s*resource\s+(\w+)\s+'([^'@]+)(?:@([^']+))?'\s*(existing\s*)?=\s*(?:if\s*\((.*)\)\s*)?(?:\[\s*for\s+(.+?):\s*)?\{/gm;
  for (const m of text.matchAll(re)) {
    const open = (m.index ?? 0) + m[0].length - 1;
    resources.push({
      symbol: m[1],
      type: m[2],
      apiVersion: m[3],
      existing: Boolean(m[4]),
      condition: m[5],
      loop: m[6],
      body: block(text, open),
    });
  }
  const params = [...text.matchAll(/((?:^\s*@.*\n)*)^\s*param\s+(\w+)\s+(\w+)(\s*=)?/gm)].map((m) => ({
    decorators: m[1],
    name: m[2],
    type: m[3],
    defaulted: Boolean(m[4]),
  }));
  const outputs = [...text.matchAll(/^\s*output\s+(\w+)\s+\w+\s*=\s*(.+)$/gm)].map((m) => ({
    name: m[1],
    value: m[2],
  }));
  const modules = [...text.matchAll(/^\s*module\s+(\w+)\s+'([^']+)'\s*=\s*(?:if\s*\((.*)\)\s*)?\{/gm)].map(
    (m) => ({
      symbol: m[1],
      path: m[2],
      condition: m[3],
      body: block(text, (m.index ?? 0) + m[0].length - 1),
    }),
  );
  return { path, text, resources, params, outputs, modules };
}

/** `name: value` at any depth of a body; the first one, as written (strings and calls kept whole). */
export function prop(body: string, name: string): string | undefined {
  const m = new RegExp(`(?:^|[\\s{,])${name}\\s*:\\s*`, 'm').exec(body);
  if (!m) return undefined;
  let depth = 0;
  let i = m.index + m[0].length;
  const start = i;
  for (; i < body.length; i++) {
    const c = body[i];
    if (c === "'") {
      i++;
      while (i < body.length && body[i] !== "'") i += body[i] === '\\' ? 2 : 1;
    } else if (c === '(' || c === '[' || c === '{') depth++;
    else if (c === ')' || c === ']' || (c === '}' && depth > 0)) depth--;
    else if (depth === 0 && (c === ',' || c === '}' || c === '\n')) break;
  }
  return body.slice(start, i).trim();
}

/** The keys of the object literal that follows `name:`. */
export function objectKeys(body: string, name: string): string[] {
  const at = body.search(new RegExp(`\\b${name}\\s*:\\s*\\{`));
  if (at < 0) return [];
  const inner = block(body, body.indexOf('{', at));
  // Top-level keys only: drop nested blocks first.
  let flat = '';
  let depth = 0;
  for (const c of inner) {
    if (c === '{') depth++;
    if (depth === 0) flat += c;
    if (c === '}') depth--;
  }
  return [...flat.matchAll(/^\s*'?([\w-]+)'?\s*:/gm)].map((m) => m[1]);
}
