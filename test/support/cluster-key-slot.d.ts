// The one function of cluster-key-slot (ioredis's own slot calculator) the tests use.
declare module 'cluster-key-slot' {
  /** The Redis Cluster hash slot of a key, its hash tag respected. */
  function slot(key: string): number;
  export = slot;
}
