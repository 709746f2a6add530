/** Functions route templates: `items/{id}`, `{id:int}`, optional `{id?}`, catch-all `{*rest}`. */
export function compileRoute(template: string): RegExp {
  const source = template
    .replace(/^\/+|\/+$/g, '')
    .split('/')
    .map((segment) => {
      const m = /^\{(\*)?(\w+)(?::[^}?]+)?(\?)?\}$/.exec(segment);
      if (!m) return `/${segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`;
      if (m[1]) return `(?:/(?<${m[2]}>.*))?`;
      return m[3] ? `(?:/(?<${m[2]}>[^/]+))?` : `/(?<${m[2]}>[^/]+)`;
    })
    .join('');
  return new RegExp(`^${source}/?$`, 'i');
}
