import type { Response } from 'express';

/**
 * Writes a body a handler made itself (YAML, plain text, feeds, HTML, metrics) with the status already set: its
 * Content-Type and Content-Length, on HEAD as on GET. Node's `res.end(body)` drops a HEAD's body without counting it,
 * so a HEAD went without the length its GET sends (Express's `res.send` and the JSON replies count it themselves).
 */
export function sendBody(res: Response, body: string, type: string): void {
  res.setHeader('Content-Type', type);
  res.setHeader('Content-Length', Buffer.byteLength(body));
  if (res.req.method === 'HEAD') res.end();
  else res.end(body);
}
