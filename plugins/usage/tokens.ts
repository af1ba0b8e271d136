export const USAGE = {
  Recorder: Symbol('usage.Recorder'),
  Events: Symbol('usage.Events'),
} as const;
