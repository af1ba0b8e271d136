import { expect } from 'chai';
import { ESLint } from 'eslint';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import tseslint from 'typescript-eslint';

/**
 * Plugins and the engine may not open connections themselves (safety conventions B4): the lint
 * rule in eslint.config.mjs reports it, and a plain scan of the sources double-checks it.
 */

const root = path.resolve(__dirname, '../../../..');

/** Forms that open a connection without SafeHttpClient. */
const FORBIDDEN: Array<{ label: string; code: string }> = [
  { label: "import http from 'node:http'", code: "import http from 'node:http';\nexport const x = http;\n" },
  { label: "import { request } from 'https'", code: "import { request } from 'https';\nexport const x = request;\n" },
  { label: "import net from 'net'", code: "import net from 'net';\nexport const x = net;\n" },
  { label: 'a call to fetch(...)', code: "export async function f(): Promise<unknown> {\n  return fetch('http://169.254.169.254/');\n}\n" },
  { label: 'globalThis.fetch(...)', code: "export async function f(): Promise<unknown> {\n  return globalThis.fetch('http://169.254.169.254/');\n}\n" },
  { label: "import * as undici from 'undici'", code: "import * as undici from 'undici';\nexport const x = undici;\n" },
  { label: "import { connect } from 'node:tls'", code: "import { connect } from 'node:tls';\nexport const x = connect;\n" },
  { label: "import http2 from 'node:http2'", code: "import http2 from 'node:http2';\nexport const x = http2;\n" },
  { label: "export { request } from 'node:http'", code: "export { request } from 'node:http';\n" },
  { label: "import('node:http')", code: "export async function f(): Promise<unknown> {\n  return import('node:http');\n}\n" },
  {
    label: "require('node:https') with no-require-imports silenced",
    code: "// eslint-disable-next-line @typescript-eslint/no-require-imports\nconst h = require('node:https') as unknown;\nexport const x = h;\n",
  },
];

const TYPE_ONLY = "import type { IncomingMessage } from 'node:http';\nimport type { Socket } from 'node:net';\nexport type Pair = [IncomingMessage, Socket];\n";

const OUTBOUND_RULES = new Set(['no-restricted-imports', 'no-restricted-globals', 'no-restricted-properties', 'no-restricted-syntax']);

describe('outbound guard: lint rule against connections outside core/outbound', function () {
  this.timeout(60_000);
  // The project's own config; type-aware parsing is switched off because the probe files do not exist on disk.
  const eslint = new ESLint({ cwd: root, overrideConfig: [tseslint.configs.disableTypeChecked] });

  const lint = async (code: string, file: string) => {
    const [result] = await eslint.lintText(code, { filePath: path.join(root, file) });
    if (!result) throw new Error('no lint result');
    const fatal = result.messages.filter((m) => m.fatal);
    expect(fatal, JSON.stringify(fatal)).to.deep.equal([]);
    return result.messages.filter((m) => m.ruleId !== null && OUTBOUND_RULES.has(m.ruleId));
  };

  it('runs against the repository root', () => {
    expect(existsSync(path.join(root, 'eslint.config.mjs'))).to.equal(true);
  });

  // Every plugin folder, not only the ones known to call out today: a rule narrowed to some plugins leaves the others open.
  const pluginDirs = readdirSync(path.join(root, 'plugins'), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => `plugins/${e.name}`);

  it('probes every plugin folder (plugins/*/)', () => {
    expect(pluginDirs).to.include.members(['plugins/pricing', 'plugins/identity', 'plugins/usage', 'plugins/verification', 'plugins/mcp']);
  });

  for (const dir of ['plugins', ...pluginDirs, 'plugins/pricing/services', 'engine']) {
    for (const f of FORBIDDEN) {
      it(`reports ${f.label} in ${dir}/`, async () => {
        const messages = await lint(f.code, `${dir}/__outbound_probe__.ts`);
        expect(messages, f.label).to.have.length.greaterThan(0);
        expect(messages.map((m) => m.message).join('\n')).to.include('SafeHttpClient');
      });
    }

    it(`allows a type-only import of node:http and node:net in ${dir}/`, async () => {
      const [result] = await eslint.lintText(TYPE_ONLY, { filePath: path.join(root, `${dir}/__outbound_probe__.ts`) });
      expect(result?.messages ?? ['no result']).to.deep.equal([]);
    });
  }

  it('does not apply to core/outbound, where the guarded client lives (the rule is scoped, not global)', async () => {
    const first = FORBIDDEN[0];
    if (!first) throw new Error('empty corpus');
    expect(await lint(first.code, 'core/outbound/__outbound_probe__.ts')).to.deep.equal([]);
  });
});

/** Static, dynamic and require imports of connection-opening modules, and any use of fetch. */
const MODULES = /^(node:)?(http|https|http2|net|tls|dgram|undici|axios|node-fetch|got)$/;

function outboundViolations(source: string): string[] {
  const code = source
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .split('\n')
    .filter((line) => !line.trim().startsWith('//'))
    .join('\n');
  const found: string[] = [];
  for (const m of code.matchAll(/\b(import|export)\s+(type\s+)?(?:[^;'"]*?\s+from\s+)?['"]([^'"]+)['"]/g)) {
    const [statement, , typeOnly, source] = m;
    if (!typeOnly && source !== undefined && MODULES.test(source)) found.push(statement);
  }
  for (const m of code.matchAll(/\b(require|import)\s*\(\s*['"]([^'"]+)['"]\s*\)/g)) {
    if (m[2] !== undefined && MODULES.test(m[2])) found.push(m[0]);
  }
  for (const m of code.matchAll(/\bfetch\b/g)) found.push(`${m[0]} at offset ${m.index}`);
  return found;
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return tsFiles(full);
    return e.isFile() && e.name.endsWith('.ts') ? [full] : [];
  });
}

describe('outbound guard: no connection-opening imports in plugins/ and engine/ (source scan)', () => {
  it('the scan flags every forbidden form and lets type-only imports through', () => {
    for (const f of FORBIDDEN) expect(outboundViolations(f.code), f.label).to.have.length.greaterThan(0);
    expect(outboundViolations("import {\n  request,\n  get,\n} from 'node:http';\n")).to.have.length(1);
    expect(outboundViolations("import 'node:net';\n")).to.have.length(1);
    expect(outboundViolations(TYPE_ONLY)).to.deep.equal([]);
    expect(outboundViolations("import { z } from 'zod';\nconst url = 'https://example.com/'; // https\n")).to.deep.equal([]);
  });

  it('finds none in any .ts file of plugins/ and engine/', () => {
    const files = ['plugins', 'engine'].flatMap((d) => tsFiles(path.join(root, d)));
    expect(files.length).to.be.greaterThan(20);
    const hits = files.flatMap((file) => outboundViolations(readFileSync(file, 'utf8')).map((v) => `${path.relative(root, file)}: ${v}`));
    expect(hits).to.deep.equal([]);
  });
});
