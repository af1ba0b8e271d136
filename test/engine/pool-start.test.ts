import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startTestService } from '../support/service';

/** Why a service with these extra worker modules did not start, or null when it did. */
function refusedStart(extraWorkerModules: string[]): Promise<Error | null> {
  return startTestService({ config: { engine: { extraWorkerModules } } }).then(
    async (svc) => {
      await svc.close();
      return null;
    },
    (err: unknown) => err as Error,
  );
}

describe('engine: a pricing pool whose workers cannot start fails the start', function () {
  this.timeout(60_000);
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'pcs-pool-start-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses to start, naming ENGINE_EXTRA_WORKER_MODULES and the error, when an extra worker module throws as it loads', async () => {
    const broken = path.join(dir, 'broken.js');
    writeFileSync(broken, "throw new Error('this module is broken');\n");
    const refusal = await refusedStart([broken]);
    expect(refusal, 'the start was refused').to.be.instanceOf(Error);
    expect((refusal as Error).message).to.contain('A pricing worker could not start').and.contain('this module is broken').and.contain(`ENGINE_EXTRA_WORKER_MODULES (${broken})`);
  });

  for (const [what, text, said] of [
    ['exports no functions', 'exports.pricers = {};\n', 'exports no `functions` object'],
    ['exports a functions entry that is not a function', 'exports.functions = { half: 0.5 };\n', 'functions.half is not a function'],
  ] as const) {
    it(`refuses to start, naming the module, when an extra worker module ${what}`, async () => {
      const odd = path.join(dir, `odd-${what.length}.js`);
      writeFileSync(odd, text);
      const refusal = await refusedStart([odd]);
      expect(refusal, 'the start was refused').to.be.instanceOf(Error);
      expect((refusal as Error).message).to.contain('A pricing worker could not start').and.contain(`${odd}`).and.contain(said);
    });
  }

  it('starts with a module that loads, and its methods are there', async () => {
    const fine = path.join(dir, 'fine.js');
    writeFileSync(fine, 'exports.functions = {};\n');
    const svc = await startTestService({ config: { engine: { extraWorkerModules: [fine] } } });
    try {
      expect((await fetch(`${svc.url}/readyz`)).status).to.equal(200);
    } finally {
      await svc.close();
    }
  });
});
