export const ACCOUNTS = {
  People: Symbol('accounts.People'),
  Sessions: Symbol('accounts.Sessions'),
} as const;
