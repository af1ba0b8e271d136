#!/usr/bin/env node
// `npm start` / `npm run migrate`: compile the TypeScript sources when they changed since the last
// build (emit only: npm test type-checks), then run the compiled service. Plain JavaScript because it runs before any build exists.
'use strict';
const { execFileSync } = require('node:child_process');
const { createHash } = require('node:crypto');
const { existsSync, readdirSync, readFileSync, writeFileSync } = require('node:fs');
const path = require('node:path');

const SOURCE_DIRS = ['core', 'plugins', 'engine', 'config', 'bin'];

function sourcesUnder(root, dir) {
  const full = path.join(root, dir);
  if (!existsSync(full)) return [];
  return readdirSync(full, { withFileTypes: true }).flatMap((entry) => {
    const rel = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) return sourcesUnder(root, rel);
    return /\.(ts|json)$/.test(entry.name) ? [rel] : [];
  });
}

/**
 * A digest of every build input: each source's path and content, the tsconfig files and
 * package.json. Modification times are not used: tar, rsync -a and cp -p carry older ones over, and
 * a deleted source or a changed config moves no time forward. Hashing the sources takes tens of
 * milliseconds; the incremental tsc, which compares contents too, takes seconds with nothing to do.
 */
function inputFingerprint(root) {
  const configs = readdirSync(root).filter((name) => /^tsconfig.*\.json$/.test(name) || name === 'package.json');
  const files = [...configs, ...SOURCE_DIRS.flatMap((dir) => sourcesUnder(root, dir))].sort();
  const hash = createHash('sha256');
  for (const file of files) hash.update(`${file}\0`).update(readFileSync(path.join(root, file))).update('\0');
  return hash.digest('hex');
}

const stampOf = (root) => path.join(root, 'dist', '.build-stamp');

/** Whether the compiled service is missing or was built from other inputs than these. */
function needsBuild(root, fingerprint = inputFingerprint(root)) {
  if (!existsSync(path.join(root, 'dist', 'core', 'main.js')) || !existsSync(stampOf(root))) return true;
  return readFileSync(stampOf(root), 'utf8').trim() !== fingerprint;
}

/** Records the inputs a successful build used (taken before it started, so an edit during the build shows next time). */
function recordBuild(root, fingerprint) {
  writeFileSync(stampOf(root), fingerprint);
}

module.exports = { inputFingerprint, needsBuild, recordBuild };

if (require.main === module) {
  const root = path.resolve(__dirname, '..');
  const fingerprint = inputFingerprint(root);
  if (needsBuild(root, fingerprint)) {
    process.stdout.write('Building the service (tsc)…\n');
    execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', path.join(root, 'tsconfig.build.json'), '--noCheck'], { stdio: 'inherit', cwd: root });
    recordBuild(root, fingerprint);
  }
  require(path.join(root, 'dist', 'core', 'main.js'));
}
