/** What can be told of Express path templates without the router: static paths, possible matches, undecodable parameters. */

/** A path without parameters or patterns, which only the same literal path can match. */
export const isStaticPath = (p: string): boolean => !/[:*?()[\]{}+]/.test(p);

/** Turns an Express path template into a regexp good enough to tell whether it could match a literal path. */
export function templateMatcher(template: string): RegExp {
  const escaped = template
    .split('/')
    .map((seg) => (seg.startsWith(':') ? '[^/]+' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${escaped}/?$`, 'i');
}

const decodes = (value: string): boolean => {
  try {
    decodeURIComponent(value);
    return true;
  } catch {
    return false;
  }
};

/**
 * The route template and parameter name behind Express's refusal to decode a path: the first
 * parametrised template, in mount order (the order the router tries them), that matches the path
 * with a parameter segment that does not decode.
 */
export function undecodableParam(templates: readonly string[]): (path: string) => { template: string; param: string } | undefined {
  const compiled = templates.filter((t) => !isStaticPath(t)).map((template) => ({ template, matcher: templateMatcher(template), segments: template.split('/') }));
  return (path) => {
    const values = path.split('/');
    for (const { template, matcher, segments } of compiled) {
      if (!matcher.test(path)) continue;
      const at = segments.findIndex((seg, i) => seg.startsWith(':') && !decodes(values[i] ?? ''));
      if (at >= 0) return { template, param: (segments[at] as string).slice(1) };
    }
    return undefined;
  };
}
