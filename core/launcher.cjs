#!/usr/bin/env node
// `npm start` / `npm run migrate`: compile the TypeScript sources when they changed since the last
// build (emit only: npm test type-checks), then run the compiled service. Plain JavaScript because it runs before any build exists.
'use strict';
const { execFileSync } = require('node:child_process');
const { existsSync, readdirSync, statSync, writeFileSync } = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const stamp = path.join(root, 'dist', '.build-stamp');

function newestSource(dir) {
  let newest = 0;
  if (!existsSync(dir)) return newest;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(full));
    else if (/\.(ts|json)$/.test(entry.name)) newest = Math.max(newest, statSync(full).mtimeMs);
  }
  return newest;
}

const sources = Math.max(...['core', 'plugins', 'engine', 'config', 'bin'].map((d) => newestSource(path.join(root, d))), statSync(path.join(root, 'tsconfig.json')).mtimeMs);
const built = existsSync(stamp) ? statSync(stamp).mtimeMs : 0;
if (sources > built || !existsSync(path.join(root, 'dist', 'core', 'main.js'))) {
  process.stdout.write('Building the service (tsc)…\n');
  execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', path.join(root, 'tsconfig.build.json'), '--noCheck'], { stdio: 'inherit', cwd: root });
  writeFileSync(stamp, new Date().toISOString());
}
require(path.join(root, 'dist', 'core', 'main.js'));
