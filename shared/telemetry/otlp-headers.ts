/**
 * The OTLP exporter's headers from the secret store (OTEL_EXPORTER_OTLP_HEADERS_SECRET_NAME): a collector's API key
 * stays in Key Vault, never in app settings, a deployment's history or a log. The secret holds what the standard
 * OTEL_EXPORTER_OTLP_HEADERS would: `name=value` pairs separated by commas, values percent-encoded.
 */

/** The most a headers secret may hold: more is not a set of headers. */
export const MAX_HEADERS_BYTES = 8 * 1024;
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Parses the OpenTelemetry headers format; throws naming the position, never a value. */
export function parseOtlpHeaders(text: string): Record<string, string> {
  if (Buffer.byteLength(text) > MAX_HEADERS_BYTES)
    throw new Error(`more than ${MAX_HEADERS_BYTES} bytes: not a list of headers`);
  const headers: Record<string, string> = {};
  text
    .split(',')
    .map((pair) => pair.trim())
    .filter(Boolean)
    .forEach((pair, i) => {
      const at = pair.indexOf('=');
      const name = at > 0 ? pair.slice(0, at).trim() : '';
      if (!TOKEN.test(name)) throw new Error(`pair ${i + 1} is not name=value with a header name`);
      let value: string;
      try {
        value = decodeURIComponent(pair.slice(at + 1).trim());
      } catch {
        throw new Error(`the value of ${name} is not percent-encoded`);
      }
      if (/[\r\n\0]/.test(value)) throw new Error(`the value of ${name} holds a line break`);
      headers[name] = value;
    });
  return headers;
}

/**
 * What the exporter calls before each request: the secret read through the store's cache (a rotated key is taken
 * within the cache's lifetime), parsed. A failure fails that export only, said once by name until it reads again.
 */
export function otlpHeadersFromSecret(
  read: (options: { abortSignal: AbortSignal }) => Promise<string>,
  onFailure: (reason: string) => void,
  options: { timeoutMs?: number } = {},
): () => Promise<Record<string, string>> {
  let failing = false;
  return async () => {
    try {
      const headers = parseOtlpHeaders(
        await read({ abortSignal: AbortSignal.timeout(options.timeoutMs ?? 10_000) }),
      );
      failing = false;
      return headers;
    } catch (err) {
      if (!failing) onFailure((err as Error).message);
      failing = true;
      throw err;
    }
  };
}
