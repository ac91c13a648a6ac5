// The package as npm publishes it: `npm pack` (its prepack copies the
// repository's LICENSE in and builds), the tarball's file list, and the
// tarball installed into an empty project, where it must load by name
// both with `import` and, on a Node that can require ES modules
// (process.features.require_module: Node ≥ 22.12, or ≥ 20.19), with
// `require`, through the exports map's `default` condition.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const pkgDir = join(dirname(fileURLToPath(import.meta.url)), '..')
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'

function run(cmd: string, args: string[], cwd: string): string {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8' })
  assert.equal(r.error, undefined, `${cmd} ${args.join(' ')}: ${r.error?.message}`)
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')} exited ${r.status}:\n${r.stdout}${r.stderr}`)
  return r.stdout
}

test('npm pack: LICENSE and the build in the tarball; import and require of the installed package', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ckpt-pack-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))

  const packed = JSON.parse(run(npm, ['pack', '--json', '--pack-destination', dir], pkgDir)) as Array<{ filename: string; files: Array<{ path: string }> }>
  assert.equal(packed.length, 1)
  const files = packed[0]!.files.map((f) => f.path).sort()
  for (const want of ['LICENSE', 'README.md', 'package.json', 'dist/index.js', 'dist/index.d.ts', 'src/index.ts']) {
    assert.ok(files.includes(want), `the tarball lacks ${want}: ${files.join(', ')}`)
  }
  assert.deepEqual(files.filter((f) => !/^(LICENSE|README\.md|package\.json|dist\/|src\/)/.test(f)), [], 'the tarball holds only the package')
  assert.equal(readFileSync(join(pkgDir, 'LICENSE'), 'utf8'), readFileSync(join(pkgDir, '..', '..', 'LICENSE'), 'utf8'), "the packed LICENSE is the repository's")

  const manifest = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')) as Record<string, unknown>
  assert.deepEqual(manifest['exports'], {
    '.': { types: './dist/index.d.ts', import: './dist/index.js', default: './dist/index.js' },
    './package.json': './package.json',
  })
  for (const key of ['repository', 'homepage', 'bugs']) assert.ok(manifest[key], `package.json has no ${key}`)
  assert.deepEqual(manifest['publishConfig'], { access: 'public' })

  const consumer = join(dir, 'consumer')
  mkdirSync(consumer)
  writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true }))
  // No registry: the tarball, and its one dependency (undici) from npm's cache, which npm ci filled.
  run(npm, ['install', '--offline', '--no-audit', '--no-fund', '--no-package-lock', join(dir, packed[0]!.filename)], consumer)

  const imported = run(process.execPath, ['--input-type=module', '-e', "const m = await import('@ckptstore/client'); console.log(typeof m.createCheckpointStore, typeof m.createPersistence)"], consumer)
  assert.equal(imported.trim(), 'function function')

  writeFileSync(
    join(consumer, 'require.cjs'),
    `if (!process.features.require_module) {
  console.log(JSON.stringify({ skip: 'Node ' + process.version + ' cannot require an ES module (require(esm) needs Node >= 22.12 or >= 20.19)' }))
} else {
  const m = require('@ckptstore/client')
  console.log(JSON.stringify({ createCheckpointStore: typeof m.createCheckpointStore, SandboxCheckpointError: typeof m.SandboxCheckpointError }))
}
`,
  )
  const required = JSON.parse(run(process.execPath, ['--no-warnings', 'require.cjs'], consumer)) as Record<string, string>
  if (required['skip'] !== undefined) {
    t.skip(required['skip'])
    return
  }
  assert.deepEqual(required, { createCheckpointStore: 'function', SandboxCheckpointError: 'function' })
})

test("the tag scheme: package.json's version is the repository's newest release in CHANGELOG.md, or the first one it announces", () => {
  const version = (JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')) as { version: string }).version
  assert.match(version, /^\d+\.\d+\.\d+$/, 'a release version X.Y.Z, the git tag vX.Y.Z without the v')
  const changelog = readFileSync(join(pkgDir, '..', '..', 'CHANGELOG.md'), 'utf8')
  const released = /^## v(\d+\.\d+\.\d+) \(\d{4}-\d{2}-\d{2}\)$/m.exec(changelog)
  const want = released?.[1] ?? /the first tag will be `v(\d+\.\d+\.\d+)`/.exec(changelog)?.[1]
  assert.ok(want !== undefined, 'CHANGELOG.md names no release and announces no first tag')
  assert.equal(version, want, 'clients/ts/package.json and CHANGELOG.md disagree on the version (CHANGELOG.md, Versions and tags)')
})
