import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ConfigError, loadConfig } from '../../config';
import { requireRedisServer, startTestRedis } from '../support/redis';

const root = path.resolve(__dirname, '../../..');

/** The one problem loadConfig reports for `env`, or undefined when it takes it. */
function problem(env: Record<string, string>): string | undefined {
  try {
    loadConfig(env);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    expect(e.problems).to.have.length(1);
    return e.problems[0];
  }
  return undefined;
}

describe('configuration: connection URLs', () => {
  it('refuses a REDIS_URL ioredis cannot use (a port out of range, a database that is not a whole number, bad percent-encoding), saying what it takes and hiding the value', () => {
    const refusals: Array<[string, string]> = [
      ['redis://127.0.0.1:99999/7', 'this one is not a URL'],
      ['redis://127.0.0.1:0/7', 'its port 0 is not from 1 to 65535'],
      ['redis://127.0.0.1:6399/abc', 'its database must be a whole number of 0 or more (such as /0), not "abc"'],
      ['redis://127.0.0.1:6399/-1', 'its database must be a whole number of 0 or more (such as /0), not "-1"'],
      ['redis://127.0.0.1:6399/1.5', 'not "1.5"'],
      ['redis://127.0.0.1:6399?db=x', 'not "x"'],
      ['/tmp/redis.sock?db=x', 'not "x"'],
      ['redis://:p%zz@127.0.0.1:6399/0', 'its password is not valid percent-encoding (write a % in them as %25)'],
      ['redis://', 'this one names no host'],
    ];
    for (const [url, words] of refusals) {
      const p = problem({ REDIS_URL: url });
      expect(p, url).to.match(/^REDIS_URL \(redis\.url\) = \(hidden\) from environment variable REDIS_URL: must be a redis:\/\/ or rediss:\/\/ URL with a host, a port from 1 to 65535 and a database number as its path/);
      expect(p, url).to.contain(words);
      expect(p, url).not.to.contain('p%zz');
    }
    for (const url of ['redis://127.0.0.1:6399', 'redis://127.0.0.1:6399/', 'redis://127.0.0.1:6399/0', 'rediss://u:p%40ss@cache.example.com/15', 'redis://[::1]:6379/2', 'redis://h?db=3', '/tmp/redis.sock', '/tmp/redis.sock?db=2']) {
      expect(loadConfig({ REDIS_URL: url }).redis.url, url).to.equal(url);
    }
  });

  it('refuses a DATABASE_URL whose user, password or database name does not percent-decode (Sequelize would end the start with a URIError), naming the part and hiding the value', () => {
    const refusals: Array<[string, string]> = [
      ['postgres://postgres:p%zz@127.0.0.1:38451/postgres', 'its password is not'],
      ['postgres://us%er:pw@db/x', 'its user is not'],
      ['postgresql://u:pw@db/pcs%', 'its database name is not'],
    ];
    for (const [url, words] of refusals) {
      const p = problem({ DATABASE_URL: url });
      expect(p, url).to.match(/^DATABASE_URL \(database\.url\) = \(hidden\) from environment variable DATABASE_URL: must be a postgres:\/\/ or postgresql:\/\/ URL whose user, password and database name are percent-encoded: /);
      expect(p, url).to.contain(`${words} (write a % in them as %25)`);
    }
    expect(loadConfig({ DATABASE_URL: 'postgres://u:p%25zz@db/x' }).database.url).to.equal('postgres://u:p%25zz@db/x');
  });

  it('stops the process at start in one sentence naming REDIS_URL, without a stack, when Redis refuses the database number in it (out of the server\'s range)', async function () {
    this.timeout(60_000);
    requireRedisServer(this);
    // A Redis of the test's own (16 databases, the default): 99999 is a whole number it does not have.
    const redis = await startTestRedis();
    const dataDir = mkdtempSync(path.join(tmpdir(), 'pcs-redis-db-'));
    chmodSync(dataDir, 0o755);
    try {
      const res = spawnSync(process.execPath, [path.join(root, 'dist/core/main.js')], { env: { ...process.env, PORT: '0', DATA_DIR: dataDir, DATABASE_URL: '', REDIS_URL: `${redis.url}?db=99999`, REDIS_CONNECT_WAIT_MS: '20000', LOG_LEVEL: 'warn' }, encoding: 'utf8', timeout: 50_000 });
      expect(res.status, res.stdout + res.stderr).to.equal(1);
      expect(res.stderr).to.match(/^Redis at REDIS_URL refused the database number in its path \(ERR DB index is out of range\); name one the server has in REDIS_URL [^\n]*\.\n$/);
      expect(res.stdout).not.to.contain('service listening');
      expect(res.stdout + res.stderr).not.to.match(/^\s+at /m);
    } finally {
      await redis.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
