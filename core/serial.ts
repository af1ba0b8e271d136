/**
 * Runs work one piece after another, in the order given: a reload started earlier never lands its
 * older read over a later one. A piece that fails fails its own caller and does not stop the next.
 */
export class Serial {
  private tail: Promise<void> = Promise.resolve();

  run(work: () => Promise<void>): Promise<void> {
    const run = this.tail.then(work, work);
    this.tail = run.catch(() => undefined);
    return run;
  }
}
