import Module from 'node:module';

/**
 * A stand-in for `@azure/functions-core`, the module the Functions worker provides. With it resolvable,
 * `@azure/functions` and `durable-functions` run unmodified and hand every registration to us.
 */
export interface Binding {
  type: string;
  direction: 'in' | 'out' | 'inout';
  [key: string]: unknown;
}

export interface FunctionMetadata {
  name: string;
  bindings: Record<string, Binding>;
  retryOptions?: unknown;
}

export type FunctionHandler = (...args: unknown[]) => unknown;

export interface Registration {
  metadata: FunctionMetadata;
  handler: FunctionHandler;
}

export const registrations = new Map<string, Registration>();
const hooks = new Map<string, Array<(context: unknown) => unknown>>();
let programmingModel: unknown;

export const functionsCore = {
  registerFunction(metadata: FunctionMetadata, handler: FunctionHandler) {
    if (registrations.has(metadata.name)) throw new Error(`function "${metadata.name}" is registered twice`);
    registrations.set(metadata.name, { metadata, handler });
    return { dispose: () => registrations.delete(metadata.name) };
  },
  registerHook(name: string, callback: (context: unknown) => unknown) {
    const list = hooks.get(name) ?? [];
    list.push(callback);
    hooks.set(name, list);
    return {
      dispose: () =>
        hooks.set(
          name,
          (hooks.get(name) ?? []).filter((c) => c !== callback),
        ),
    };
  },
  setProgrammingModel(model: unknown) {
    programmingModel = model;
  },
  getProgrammingModel() {
    return programmingModel;
  },
  log(level: string, category: string, message: string) {
    if (level === 'error' || level === 'critical' || level === 'warning')
      process.stderr.write(`[${category}] ${message}\n`);
  },
};

const CORE = '@azure/functions-core';
let installed = false;

/** Makes `require('@azure/functions-core')` resolve to the stand-in. Call before loading the app. */
export function installFunctionsCore(): void {
  if (installed) return;
  installed = true;
  const m = Module as unknown as {
    _resolveFilename: (request: string, ...rest: unknown[]) => string;
    _cache: Record<string, unknown>;
  };
  const original = m._resolveFilename;
  m._resolveFilename = function (request: string, ...rest: unknown[]) {
    return request === CORE ? CORE : original.call(this, request, ...rest);
  };
  const stub = new Module(CORE);
  stub.exports = functionsCore;
  stub.loaded = true;
  m._cache[CORE] = stub;
}

export function triggerOf(metadata: FunctionMetadata): Binding & { name: string } {
  const entry = Object.entries(metadata.bindings).find(([, b]) => /trigger$/i.test(b.type));
  if (!entry) throw new Error(`function "${metadata.name}" has no trigger binding`);
  return { ...entry[1], name: entry[0] };
}
