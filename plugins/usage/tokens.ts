export const USAGE = {
  Recorder: Symbol('usage.Recorder'),
  Events: Symbol('usage.Events'),
  Replays: Symbol('usage.Replays'),
} as const;
