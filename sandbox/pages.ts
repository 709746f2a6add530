import { escapeHtml } from './http';

/** Plain server-rendered HTML with enough style to be readable; no scripts needed. */
export function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>
  body { font-family: system-ui, sans-serif; margin: 0; background: #f5f6f8; color: #1b1f24; }
  header { background: #1f3a5f; color: #fff; padding: .75rem 1.5rem; }
  header a { color: #fff; }
  main { max-width: 44rem; margin: 2rem auto; background: #fff; padding: 1.5rem 2rem; border-radius: 8px; }
  label { display: block; margin-top: 1rem; font-weight: 600; }
  input { font-size: 1rem; padding: .45rem; width: 100%; box-sizing: border-box; border: 1px solid #5b6470; border-radius: 4px; }
  button { margin-top: 1.2rem; font-size: 1rem; padding: .5rem 1.1rem; border-radius: 4px; border: 1px solid #1f3a5f; background: #1f3a5f; color: #fff; cursor: pointer; }
  button.secondary { background: #fff; color: #1f3a5f; }
  button.danger { background: #a4262c; border-color: #a4262c; }
  .error { color: #a4262c; font-weight: 600; }
  .notice { background: #fff4ce; padding: .75rem; border-radius: 4px; }
  code.secret { display: block; font-size: 1.05rem; padding: .6rem; background: #eef1f5; word-break: break-all; }
  table { border-collapse: collapse; width: 100%; margin-top: 1rem; }
  th, td { text-align: left; padding: .4rem; border-bottom: 1px solid #d0d5dc; vertical-align: top; }
  td form { display: inline; }
  td button { margin-top: 0; padding: .25rem .6rem; font-size: .9rem; }
  :focus-visible { outline: 3px solid #f2a900; outline-offset: 2px; }
</style>
</head>
<body>
<header><strong>Tenant sandbox</strong></header>
<main>
${body}
</main>
</body>
</html>`;
}

export const field = (
  name: string,
  label: string,
  opts: { type?: string; value?: string; required?: boolean; autocomplete?: string } = {},
) =>
  `<label for="${name}">${escapeHtml(label)}</label>
<input id="${name}" name="${name}" type="${opts.type ?? 'text'}"${opts.value ? ` value="${escapeHtml(opts.value)}"` : ''}${opts.required ? ' required' : ''}${opts.autocomplete ? ` autocomplete="${opts.autocomplete}"` : ''}>`;

export const errorLine = (message?: string) =>
  message ? `<p class="error" role="alert">${escapeHtml(message)}</p>` : '';
