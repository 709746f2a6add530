/**
 * What the admin page and the status page share: the document head and the base look (header, sections, focus
 * ring, links). Each page adds its own rules after these.
 */
const BASE_CSS = `  body { font-family: system-ui, sans-serif; margin: 0; background: #f5f6f8; color: #1b1f24; line-height: 1.45; }
  header { background: #1f3a5f; color: #fff; padding: .8rem 1.5rem; display: flex; justify-content: space-between; align-items: baseline; gap: 1rem; }
  header h1 { margin: 0; font-size: 1.25rem; }
  header a { color: #fff; }
  main { margin: 1.5rem auto; padding: 0 1rem; display: grid; gap: 1.25rem; }
  section { background: #fff; border-radius: 8px; padding: 1.25rem 1.5rem; border: 1px solid #d0d5dc; }
  h2 { margin-top: 0; font-size: 1.1rem; }
  :focus-visible { outline: 3px solid #b35c00; outline-offset: 2px; }
  a { color: #0b4f9c; }
`;

/** `<!doctype html>` to `</head>`: the title, the base look with the page's own width, then the page's CSS. */
export const pageHead = (title: string, options: { maxWidthRem: number; css: string }) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<style>
${BASE_CSS}  main { max-width: ${options.maxWidthRem}rem; }
${options.css}</style>
</head>`;
