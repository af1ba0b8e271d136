export const USAGE = {
  Recorder: Symbol('usage.Recorder'),
} as const;
