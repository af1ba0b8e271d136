import { expect } from 'chai';
import { loadConfig } from '../../../config';
import { ManualClock } from '../../../core/clock';
import type { Sql } from '../../../core/db/sql';
import type { Changelog, ChangelogEntry } from '../../../plugins/discovery';
import { Notices } from '../../../plugins/discovery/services/notices';

const NOW = Date.parse('2027-12-01T12:00:00Z');
const entry = (id: string, daysAgo: number): ChangelogEntry => ({ id, date: new Date(NOW - daysAgo * 86_400_000).toISOString(), title: id, summary: id, link: `/changelog#${id}`, audience: ['agents'] });

/** Notices over a deliveries table in memory, counting the statements it sends. */
function world(perResponse = 3) {
  let recent: ChangelogEntry[] = [];
  const delivered = new Set<string>();
  const statements: string[] = [];
  /** Deliveries another instance makes between this one's read and its claim. */
  const racing: string[] = [];
  const sql = {
    many: async (text: string, params: unknown[]) => {
      statements.push(text.split(' ')[0] as string);
      const [keyId, ids] = params as [string, string[] | undefined];
      if (text.startsWith('SELECT')) return [...delivered].filter((d) => d.startsWith(`${keyId}/`)).map((d) => ({ entry_id: d.slice(keyId.length + 1) }));
      for (const d of racing.splice(0)) delivered.add(d);
      const claimed = (ids ?? []).filter((id) => !delivered.has(`${keyId}/${id}`));
      for (const id of claimed) delivered.add(`${keyId}/${id}`);
      return claimed.map((entry_id) => ({ entry_id }));
    },
  } as unknown as Sql;
  const changelog = { agentEntriesSince: () => recent, agentSignatureSince: () => recent.map((e) => e.id).join('\n') } as unknown as Changelog;
  const config = loadConfig({ LOG_LEVEL: 'silent' }, { limits: { notices: { perResponse } } });
  const notices = new Notices(sql, changelog, new ManualClock(NOW), config);
  return { notices, statements, racing, setRecent: (e: ChangelogEntry[]) => (recent = e) };
}

describe('response notices: what a key has seen is remembered in process', () => {
  it('asks the database nothing for a key that has seen every recent entry, and asks again once there is news', async () => {
    const w = world();
    w.setRecent([entry('e2', 1), entry('e1', 20)]);
    expect((await w.notices.forKey('k1')).map((n) => n.id)).to.deep.equal(['e2']);
    const first = w.statements.length;
    expect(first).to.be.greaterThan(0);
    expect(await w.notices.forKey('k1')).to.deep.equal([]);
    expect(w.statements.length).to.equal(first);

    w.setRecent([entry('e3', 0), entry('e2', 1), entry('e1', 20)]);
    expect((await w.notices.forKey('k1')).map((n) => n.id)).to.deep.equal(['e3']);
    const second = w.statements.length;
    expect(second).to.be.greaterThan(first);
    expect(await w.notices.forKey('k1')).to.deep.equal([]);
    expect(w.statements.length).to.equal(second);
  });

  it('reads again a key with more news than one response carries, until it has seen all of it', async () => {
    const w = world(1);
    w.setRecent([entry('e1', 1)]);
    expect((await w.notices.forKey('k1')).map((n) => n.id)).to.deep.equal(['e1']);
    w.setRecent([entry('e3', 0), entry('e2', 0.5), entry('e1', 1)]);
    expect((await w.notices.forKey('k1')).map((n) => n.id)).to.deep.equal(['e3']);
    expect((await w.notices.forKey('k1')).map((n) => n.id)).to.deep.equal(['e2']);
    const settled = w.statements.length;
    expect(await w.notices.forKey('k1')).to.deep.equal([]);
    expect(w.statements.length).to.equal(settled);
  });

  it('reads again a key whose due entry another instance claimed first, and then remembers it', async () => {
    const w = world();
    w.setRecent([entry('e1', 1)]);
    await w.notices.forKey('k1');
    w.setRecent([entry('e2', 0), entry('e1', 1)]);
    w.racing.push('k1/e2');
    expect(await w.notices.forKey('k1')).to.deep.equal([]);
    const raced = w.statements.length;
    // Not remembered: the next call reads the deliveries again, finds e2 shown, and remembers that.
    expect(await w.notices.forKey('k1')).to.deep.equal([]);
    expect(w.statements.length).to.equal(raced + 1);
    expect(await w.notices.forKey('k1')).to.deep.equal([]);
    expect(w.statements.length).to.equal(raced + 1);
  });
});
