import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';

interface Launcher {
  inputFingerprint(root: string): string;
  needsBuild(root: string): boolean;
  recordBuild(root: string, fingerprint: string): void;
}

const launcher = createRequire(__filename)(path.resolve(__dirname, '../../../core/launcher.cjs')) as Launcher;

describe('launcher: the rebuild decision of npm start', () => {
  let root: string;
  const write = (file: string, text: string) => {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), text);
  };
  const built = () => launcher.recordBuild(root, launcher.inputFingerprint(root));

  beforeEach(() => {
    root = mkdtempSync(path.join(tmpdir(), 'pcs-launcher-'));
    write('package.json', '{"name":"x"}');
    write('tsconfig.json', '{}');
    write('tsconfig.build.json', '{"extends":"./tsconfig.json"}');
    write('core/main.ts', 'export const a = 1;\n');
    write('plugins/p/index.ts', 'export const b = 2;\n');
    write('dist/core/main.js', '');
    built();
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('runs the existing build when no input changed', () => {
    expect(launcher.needsBuild(root)).to.equal(false);
  });

  it('rebuilds when a source changed but carries an older modification time (tar, rsync -a, cp -p)', () => {
    const file = path.join(root, 'core/main.ts');
    const before = statSync(file).mtime;
    writeFileSync(file, 'export const a = 2;\n');
    const older = new Date(before.getTime() - 86_400_000);
    utimesSync(file, older, older);
    expect(launcher.needsBuild(root)).to.equal(true);
  });

  it('rebuilds when a source is deleted or added', () => {
    rmSync(path.join(root, 'plugins/p/index.ts'));
    expect(launcher.needsBuild(root), 'deleted').to.equal(true);
    built();
    write('engine/new.ts', 'export {};\n');
    expect(launcher.needsBuild(root), 'added').to.equal(true);
  });

  it('rebuilds when tsconfig.build.json or package.json changes', () => {
    write('tsconfig.build.json', '{"extends":"./tsconfig.json","compilerOptions":{"target":"ES2020"}}');
    expect(launcher.needsBuild(root), 'tsconfig.build.json').to.equal(true);
    built();
    write('package.json', '{"name":"x","type":"commonjs"}');
    expect(launcher.needsBuild(root), 'package.json').to.equal(true);
  });

  it('rebuilds when the compiled entry point is missing', () => {
    rmSync(path.join(root, 'dist/core/main.js'));
    expect(launcher.needsBuild(root)).to.equal(true);
  });
});

describe('npm start: the signal a supervisor sends reaches the service', () => {
  it('runs the launcher in place of the shell npm starts, so SIGTERM to that process is the service\'s graceful stop', async () => {
    const pkg = JSON.parse(readFileSync(path.resolve(__dirname, '../../../package.json'), 'utf8')) as { scripts: { start: string } };
    const root = mkdtempSync(path.join(tmpdir(), 'pcs-start-'));
    // A stand-in for the launcher that reports the signal it gets.
    mkdirSync(path.join(root, 'core'));
    writeFileSync(path.join(root, 'core/launcher.cjs'), "process.on('SIGTERM', () => { console.log('SIGTERM reached the service'); process.exit(0); }); console.log('ready'); setInterval(() => {}, 1000);\n");
    // What npm does: its script in `sh -c`, and on SIGTERM it signals that child.
    const child = spawn('sh', ['-c', pkg.scripts.start], { cwd: root, env: { ...process.env, PATH: `${path.dirname(process.execPath)}:${process.env.PATH ?? ''}` }, stdio: ['ignore', 'pipe', 'inherit'], detached: true });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      for (let i = 0; i < 100 && !output.includes('ready'); i++) await new Promise((r) => setTimeout(r, 30));
      expect(output).to.include('ready');
      child.kill('SIGTERM');
      const code = await Promise.race([exited, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 3000))]);
      await new Promise((r) => setTimeout(r, 100));
      expect(output).to.include('SIGTERM reached the service');
      expect(code).to.equal(0);
    } finally {
      // Whatever is left of the group (a shell's orphaned child, without exec).
      try {
        process.kill(-(child.pid as number), 'SIGKILL');
      } catch {
        // already gone
      }
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("sets glibc's MALLOC_MMAP_THRESHOLD_ to 128 KiB unless the operator set one: large buffers (scrypt's 16 MB) go back to the system when freed", async () => {
    const pkg = JSON.parse(readFileSync(path.resolve(__dirname, '../../../package.json'), 'utf8')) as { scripts: { start: string } };
    const root = mkdtempSync(path.join(tmpdir(), 'pcs-start-'));
    mkdirSync(path.join(root, 'core'));
    writeFileSync(path.join(root, 'core/launcher.cjs'), 'console.log(`threshold=${process.env.MALLOC_MMAP_THRESHOLD_}`);\n');
    const startWith = (extra: Record<string, string>) =>
      new Promise<string>((resolve) => {
        const env: NodeJS.ProcessEnv = { ...process.env, ...extra, PATH: `${path.dirname(process.execPath)}:${process.env.PATH ?? ''}` };
        if (!('MALLOC_MMAP_THRESHOLD_' in extra)) delete env.MALLOC_MMAP_THRESHOLD_;
        const child = spawn('sh', ['-c', pkg.scripts.start], { cwd: root, env, stdio: ['ignore', 'pipe', 'inherit'] });
        let output = '';
        child.stdout.on('data', (d: Buffer) => (output += d.toString()));
        child.once('exit', () => resolve(output.trim()));
      });
    try {
      expect(await startWith({})).to.equal('threshold=131072');
      expect(await startWith({ MALLOC_MMAP_THRESHOLD_: '65536' })).to.equal('threshold=65536');
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
