import { expect } from 'chai';
import { parse as parseYaml } from 'yaml';
import { ManualClock } from '../../../core/clock';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { client } from '../../support/http';

const HOUR = 3_600_000;

/** The observed_at times of the observations example in a JSON OpenAPI document. */
function observedAts(doc: Record<string, any>): string[] {
  const example = doc.paths['/api/data/observations'].post.requestBody.content['application/json'].example as { observations: Array<{ observed_at: string }> };
  return example.observations.map((o) => o.observed_at);
}

describe('serving the OpenAPI document', function () {
  this.timeout(60_000);
  let svc: TestService;
  const clock = new ManualClock(Date.parse('2026-06-01T10:15:00Z'));
  before(async () => {
    svc = await startTestService({ clock });
  });
  after(() => svc.close());

  it('rebuilds the document once the UTC hour turns, so examples read at serve time (observed_at) stay inside the verification window', async () => {
    const api = client(svc.url);
    const first = await api.get<Record<string, any>>('/api/openapi.json?format=json');
    expect(first.status).to.equal(200);
    const before = observedAts(first.body);
    expect(Date.parse(before[0] ?? '')).to.be.below(clock.now()).and.above(clock.now() - 12 * HOUR);
    // Within the hour the built document is served as it is.
    clock.advance(30 * 60_000);
    expect(observedAts((await api.get<Record<string, any>>('/api/openapi.json?format=json')).body)).to.deep.equal(before);
    // A long-running instance, 200 days on (past VERIFY_MAX_AGE_DAYS): the times are hours before the new now, in both formats.
    clock.advance(200 * 24 * HOUR);
    const later = await api.get<Record<string, any>>('/api/openapi.json?format=json');
    const after = observedAts(later.body);
    expect(after).to.have.lengthOf(before.length);
    for (const [i, t] of after.entries()) expect(Date.parse(t) - Date.parse(before[i] ?? ''), t).to.equal(200 * 24 * HOUR + 30 * 60_000);
    const yaml = await api.get('/api/openapi.json');
    expect(yaml.text).to.include(after[0]);
  });

  it('chooses the format by Accept as Express negotiates it: q=0 refuses JSON, the higher q-value wins, YAML without a preference', async () => {
    const api = client(svc.url);
    const cases: Array<[string | undefined, 'yaml' | 'json']> = [
      [undefined, 'yaml'],
      ['*/*', 'yaml'],
      ['application/json', 'json'],
      ['application/yaml, application/json;q=0', 'yaml'],
      ['application/json;q=0', 'yaml'],
      ['application/json;q=0.5, application/yaml;q=0.9', 'yaml'],
      ['application/yaml;q=0.4, application/json;q=0.8', 'json'],
      ['application/json;q=0.9, */*;q=0.1', 'json'],
      ['text/html', 'yaml'],
    ];
    for (const [accept, format] of cases) {
      const res = await api.get('/api/openapi.json', accept === undefined ? {} : { accept });
      expect(res.status, `Accept: ${accept}`).to.equal(200);
      expect(res.headers.get('content-type'), `Accept: ${accept}`).to.equal(`application/${format}; charset=utf-8`);
      expect(res.headers.get('vary'), `Accept: ${accept}`).to.equal('Accept');
      expect(res.text.startsWith('{'), `Accept: ${accept}`).to.equal(format === 'json');
    }
    // format= in the address wins over Accept, and the answer then does not vary on it.
    const yaml = await api.get('/api/openapi.json?format=yaml', { accept: 'application/json' });
    expect(yaml.headers.get('content-type')).to.equal('application/yaml; charset=utf-8');
    expect(yaml.headers.get('vary')).to.equal(null);
    const json = await api.get('/api/openapi.json?format=json', { accept: 'application/yaml, application/json;q=0' });
    expect(json.headers.get('content-type')).to.equal('application/json; charset=utf-8');
    expect(json.headers.get('vary')).to.equal(null);
  });

  it('quotes strings in the YAML document that YAML 1.1 or 1.2 would read as another type (dates), so both read the JSON document', async () => {
    const api = client(svc.url);
    const json = await api.get<Record<string, any>>('/api/openapi.json?format=json');
    const yaml = await api.get('/api/openapi.json?format=yaml');
    expect(yaml.status).to.equal(200);
    // The examples hold such strings: a date of birth and observation times.
    expect(yaml.text).to.match(/observed_at: "\d{4}-\d{2}-\d{2}T[\d:]+Z"/);
    expect(yaml.text).to.match(/: "\d{4}-\d{2}-\d{2}"\n/);
    // PyYAML and js-yaml's default read 1.1, where an unquoted 2026-11-29T19:00:46Z is a timestamp.
    expect(parseYaml(yaml.text, { version: '1.1' })).to.deep.equal(json.body);
    expect(parseYaml(yaml.text)).to.deep.equal(json.body);
  });

  it('serves the YAML and the JSON of one build with identical values, even when the clock moves while the document is serialized', async () => {
    // A clock that ticks a second at every read once armed: each read of observed_at (a getter) then gives another time.
    class TickingClock extends ManualClock {
      armed = false;
      override now(): number {
        if (this.armed) this.advance(1000);
        return super.now();
      }
    }
    const ticking = new TickingClock(Date.parse('2026-06-01T10:00:00Z'));
    const other = await startTestService({ clock: ticking });
    try {
      const api = client(other.url);
      ticking.armed = true;
      const json = await api.get<Record<string, any>>('/api/openapi.json?format=json');
      const yaml = await api.get('/api/openapi.json?format=yaml');
      ticking.armed = false;
      expect([json.status, yaml.status]).to.deep.equal([200, 200]);
      expect(observedAts(parseYaml(yaml.text, { version: '1.1' }) as Record<string, any>)).to.deep.equal(observedAts(json.body));
      expect(parseYaml(yaml.text)).to.deep.equal(json.body);
    } finally {
      await other.close();
    }
  });
});
