import { expect } from 'chai';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { makeFolder } from '../../core/folders';

describe('makeFolder: a data folder and the folders above it', () => {
  let base: string;
  before(() => {
    base = mkdtempSync(path.join(tmpdir(), 'pcs-folders-'));
  });
  after(() => rmSync(base, { recursive: true, force: true }));

  it('creates every missing level, and takes a folder that is already there', () => {
    const deep = path.join(base, 'a', 'b', 'c');
    makeFolder(deep);
    expect(statSync(deep).isDirectory()).to.equal(true);
    makeFolder(deep);
    expect(existsSync(deep)).to.equal(true);
  });

  it('throws at once for a folder under /proc, where a recursive mkdirSync of Node 20 never returns', function () {
    this.timeout(2000);
    const started = performance.now();
    expect(() => makeFolder('/proc/pcs-no-such-folder/data')).to.throw(/ENOENT/);
    expect(performance.now() - started).to.be.below(500);
  });

  it('throws the reason for a path below a file', () => {
    const file = path.join(base, 'file');
    writeFileSync(file, 'x');
    expect(() => makeFolder(path.join(file, 'data'))).to.throw(/ENOTDIR/);
  });
});
