import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { renderConfigTable } from './docs';

/** Rewrites the configuration table between the README markers (npm run docs:config). */
const readmePath = path.resolve(__dirname, '../../README.md');
const START = '<!-- config-table:start -->';
const END = '<!-- config-table:end -->';
const readme = readFileSync(readmePath, 'utf8');
const a = readme.indexOf(START);
const b = readme.indexOf(END);
if (a < 0 || b < a) throw new Error('README.md lacks the config-table markers');
writeFileSync(readmePath, `${readme.slice(0, a + START.length)}\n${renderConfigTable()}\n${readme.slice(b)}`);
process.stdout.write('README.md configuration table updated.\n');
