import path from 'node:path';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const root = path.dirname(new URL(import.meta.url).pathname);

/**
 * Plugins reach each other only through what a plugin's index.ts exports: an import that lands in
 * another plugin's folder must name that folder (or its index), never a file inside it.
 */
const pluginBoundaries = {
  meta: { type: 'problem', schema: [], messages: { internal: 'Import "{{source}}" reaches into plugin "{{other}}"; import from its index instead.' } },
  create(context) {
    const file = context.filename;
    const pluginsDir = path.join(root, 'plugins') + path.sep;
    if (!file.startsWith(pluginsDir)) return {};
    const own = file.slice(pluginsDir.length).split(path.sep)[0];
    const check = (node) => {
      const source = node.source && node.source.value;
      if (typeof source !== 'string' || !source.startsWith('.')) return;
      const target = path.resolve(path.dirname(file), source);
      if (!target.startsWith(pluginsDir)) return;
      const rest = target.slice(pluginsDir.length).split(path.sep);
      const other = rest[0];
      if (other === own || rest.length === 1 || (rest.length === 2 && rest[1] === 'index')) return;
      context.report({ node, messageId: 'internal', data: { source, other } });
    };
    return { ImportDeclaration: check, ExportNamedDeclaration: check, ExportAllDeclaration: check };
  },
};

const outboundMessage = 'Outbound HTTP goes through the guarded client in core/outbound (SafeHttpClient); plugins and the engine may not open connections themselves.';
const outboundBuiltins = ['http', 'https', 'http2', 'net', 'tls', 'dgram'];
const outboundModules = [...outboundBuiltins.flatMap((m) => [m, `node:${m}`]), 'undici', 'axios', 'node-fetch', 'got'];
const outboundModulePattern = `/^(node:)?(${[...outboundBuiltins, 'undici', 'axios', 'node-fetch', 'got'].join('|')})$/`;

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'data/**', 'coverage/**', '**/*.js', '**/*.cjs', '**/*.mjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: root } },
    plugins: { local: { rules: { 'plugin-boundaries': pluginBoundaries } } },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-non-null-assertion': 'error',
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': ['error', { prefer: 'type-imports', fixStyle: 'separate-type-imports' }],
      '@typescript-eslint/only-throw-error': 'off',
      '@typescript-eslint/no-unsafe-enum-comparison': 'off',
      'no-restricted-exports': ['error', { restrictDefaultExports: { direct: true, named: true, defaultFrom: true, namedFrom: true, namespaceFrom: true } }],
      'local/plugin-boundaries': 'error',
    },
  },
  {
    files: ['plugins/**/*.ts', 'engine/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: outboundModules.map((name) => ({
            name,
            message: outboundMessage,
            allowTypeImports: true,
          })),
        },
      ],
      'no-restricted-globals': ['error', { name: 'fetch', message: outboundMessage }],
      'no-restricted-properties': ['error', ...['globalThis', 'global'].map((object) => ({ object, property: 'fetch', message: outboundMessage }))],
      // Dynamic import() and require() escape no-restricted-imports.
      'no-restricted-syntax': [
        'error',
        { selector: `ImportExpression[source.value=${outboundModulePattern}]`, message: outboundMessage },
        { selector: `CallExpression[callee.name='require'][arguments.0.value=${outboundModulePattern}]`, message: outboundMessage },
      ],
    },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unused-expressions': 'off',
      // Response bodies are untyped JSON in tests.
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
);
