import { listSettings } from './load';

const escapeCell = (s: string): string => s.replace(/\|/g, '\\|');

function shownDefault(value: unknown): string {
  if (value === undefined) return '(unset)';
  if (Array.isArray(value)) return `\`${value.join(',')}\``;
  return `\`${JSON.stringify(value).replace(/^"|"$/g, '')}\``;
}

/** The configuration table of the README, generated from the settings declarations. */
export function renderConfigTable(): string {
  const rows = listSettings().map(
    ({ path, def }) => `| \`${def.env}\` | \`${path}\` | ${shownDefault(def.default)} | ${escapeCell(def.doc)} |`,
  );
  return ['| Environment variable | Setting | Default | Meaning |', '|---|---|---|---|', ...rows].join('\n');
}
