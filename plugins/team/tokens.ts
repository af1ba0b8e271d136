/** DI tokens other plugins use to reach team services (import them from the plugin's index). */
export const TEAM = {
  Invitations: Symbol('team.Invitations'),
  Members: Symbol('team.Members'),
} as const;
