import type { Response } from 'express';
import { z } from 'zod';
import { HANDLED, defineRoute, ok } from '../../../core/http/route';
import { sendBody } from '../../../core/http/send-body';
import type { HandlerResult, RouteSpec } from '../../../core/http/route';
import * as r from '../responses';
import type { Changelog, ChangelogEntry } from '../services/changelog';

const audienceQuery = z.object({ audience: z.enum(['agents', 'people']).optional() });

/**
 * Every form of the changelog (feeds, page, list) is public and cached for five minutes, with a strong ETag of its bytes:
 * a reader polling it with If-None-Match gets 304 without the body until an entry is published.
 */
const CACHE_CONTROL = 'public, max-age=300';

const escapeXml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;');

export function changelogRoutes(changelog: Changelog, publicUrl: () => string): RouteSpec[] {
  const pick = (audience?: 'agents' | 'people'): ChangelogEntry[] => changelog.all().filter((e) => !audience || e.audience.includes(audience));
  // A feed's own address is its identity to readers: a filtered feed names itself with its filter.
  const selfUrl = (path: string, audience?: 'agents' | 'people'): string => `${publicUrl()}${path}${audience ? `?audience=${audience}` : ''}`;
  const send = (res: Response, body: string, type: string): HandlerResult => {
    res.setHeader('Cache-Control', CACHE_CONTROL);
    sendBody(res.status(200), body, type, { etag: true });
    return HANDLED;
  };
  return [
    defineRoute({
      id: 'changelog.jsonFeed',
      method: 'get',
      path: '/api/changelog/feed.json',
      summary: 'The changelog as JSON Feed 1.1; items[]._service.audience says who an entry is for (agents, people).',
      tags: ['Changelog'],
      auth: 'public',
      rateLimit: 'none',
      conditional: true,
      query: audienceQuery,
      produces: ['application/feed+json'],
      responses: { 200: { description: 'The changelog as JSON Feed 1.1.', schema: r.jsonFeedResponse } },
      handler: ({ query, res }): HandlerResult => {
        const base = publicUrl();
        return send(
          res,
          JSON.stringify({
            version: 'https://jsonfeed.org/version/1.1',
            title: 'Pricing Compute Service changelog',
            home_page_url: `${base}/changelog`,
            feed_url: selfUrl('/api/changelog/feed.json', query.audience),
            description: 'Changes to the pricing compute service. Entries for agents have _service.audience including "agents".',
            language: 'en',
            items: pick(query.audience).map((e) => ({
              id: e.id,
              url: e.link,
              title: e.title,
              summary: e.summary,
              content_text: e.summary,
              date_published: e.date,
              _service: { audience: e.audience },
            })),
          }),
          'application/feed+json; charset=utf-8',
        );
      },
    }),
    defineRoute({
      id: 'changelog.rss',
      method: 'get',
      path: '/api/changelog/rss.xml',
      summary: 'The changelog as RSS 2.0.',
      tags: ['Changelog'],
      auth: 'public',
      rateLimit: 'none',
      conditional: true,
      query: audienceQuery,
      produces: ['application/rss+xml'],
      handler: ({ query, res }): HandlerResult => {
        const base = publicUrl();
        const items = pick(query.audience)
          .map(
            (e) =>
              `    <item>\n      <guid isPermaLink="false">${escapeXml(e.id)}</guid>\n      <title>${escapeXml(e.title)}</title>\n      <link>${escapeXml(e.link)}</link>\n      <description>${escapeXml(e.summary)}</description>\n      <pubDate>${new Date(e.date).toUTCString()}</pubDate>\n${e.audience.map((a) => `      <category>${escapeXml(a)}</category>`).join('\n')}\n    </item>`,
          )
          .join('\n');
        return send(
          res,
          `<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom">\n  <channel>\n    <title>Pricing Compute Service changelog</title>\n    <link>${escapeXml(`${base}/changelog`)}</link>\n    <description>Changes to the pricing compute service.</description>\n    <atom:link href="${escapeXml(selfUrl('/api/changelog/rss.xml', query.audience))}" rel="self" type="application/rss+xml"/>\n${items}\n  </channel>\n</rss>\n`,
          'application/rss+xml; charset=utf-8',
        );
      },
    }),
    defineRoute({
      id: 'changelog.page',
      method: 'get',
      path: '/changelog',
      summary: 'The changelog as a web page; audience (agents, people) filters it as it does the feeds.',
      tags: ['Changelog'],
      auth: 'public',
      rateLimit: 'none',
      conditional: true,
      query: audienceQuery,
      produces: ['text/html'],
      handler: ({ query, res }): HandlerResult => {
        const body = pick(query.audience)
          .map((e) => `<article id="${escapeXml(e.id)}"><h2>${escapeXml(e.title)}</h2><p><time datetime="${e.date}">${e.date.slice(0, 10)}</time> · for ${escapeXml(e.audience.join(', '))}</p><p>${escapeXml(e.summary)}</p></article>`)
          .join('\n');
        return send(
          res,
          `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Changelog · Pricing Compute Service</title><link rel="alternate" type="application/feed+json" href="${escapeXml(selfUrl('/api/changelog/feed.json', query.audience))}"><link rel="alternate" type="application/rss+xml" href="${escapeXml(selfUrl('/api/changelog/rss.xml', query.audience))}"></head><body><h1>Changelog</h1>\n${body}\n</body></html>`,
          'text/html; charset=utf-8',
        );
      },
    }),
    defineRoute({
      id: 'changelog.list',
      method: 'get',
      path: '/api/changelog',
      summary: 'Changelog entries as a plain list envelope (newest first).',
      tags: ['Changelog'],
      auth: 'public',
      rateLimit: 'none',
      conditional: true,
      query: audienceQuery,
      responses: { 200: { description: 'Every published entry.', schema: r.changelogListResponse } },
      handler: ({ query }) => {
        const data = pick(query.audience);
        return { ...ok({ object: 'list', data, has_more: false, next_cursor: null, limit: data.length }, { 'Cache-Control': CACHE_CONTROL }), etag: true };
      },
    }),
  ];
}
