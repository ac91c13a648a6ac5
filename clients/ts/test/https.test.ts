// The node:https side of the Node transport: a ckptserver serving HTTPS
// with a throw-away self-signed certificate (openssl), which this process
// trusts through NODE_EXTRA_CA_CERTS in a child process, so no check is
// turned off. The child makes calls of every kind over one keep-alive
// connection and prints what it got.

import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startServer, type Running } from './helpers.js'

const here = dirname(fileURLToPath(import.meta.url))
const openssl = spawnSync('openssl', ['version'], { encoding: 'utf8' })
const why = openssl.error || openssl.status !== 0 ? 'openssl is not on PATH: no certificate to serve HTTPS with' : undefined

if (why) {
  test('https through node:https', { skip: why }, () => {})
} else {
  let dir: string
  let server: Running
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ckpt-tls-'))
    const r = spawnSync(
      'openssl',
      ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1',
        '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')],
      { encoding: 'utf8' },
    )
    assert.equal(r.status, 0, r.stderr)
    server = await startServer('mem', ['--dev', '--tls-cert', join(dir, 'cert.pem'), '--tls-key', join(dir, 'key.pem')])
  })
  after(async () => {
    await server?.stop()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  test('https: every kind of call through node:https, trusting the server by its CA only', () => {
    assert.match(server.url, /^https:\/\//)
    const script = join(mkdtempSync(join(tmpdir(), 'ckpt-tls-script-')), 'run.mjs')
    writeFileSync(
      script,
      `import { createCheckpointStore } from ${JSON.stringify(join(here, '..', 'dist', 'index.js'))}
const store = createCheckpointStore({ url: process.argv[2] })
const w = await store.acquireWriter('t')
const cp = { id: 'c1', threadId: 't', parentCheckpointId: null, createdAt: 1, reason: 'automatic', files: [], conversation: [], artifacts: [] }
const a = await store.append({ checkpoint: cp, expectedHeadId: null, writer: w })
const head = await store.getHead('t')
const err = await store.append({ checkpoint: { ...cp, id: 'c2' }, expectedHeadId: null, writer: w }).catch((e) => e.code)
console.log(JSON.stringify({ a, head, err }))
`,
    )
    // Without the CA the certificate is refused (CERTIFICATE_ERROR, never retried)...
    const refused = spawnSync(process.execPath, ['-e', `import(${JSON.stringify(join(here, '..', 'dist', 'index.js'))}).then(async (m) => { const s = m.createCheckpointStore({ url: ${JSON.stringify(server.url)}, maxAttempts: 1 }); console.log(await s.getHead('t').catch((e) => e.code)) })`], { encoding: 'utf8' })
    assert.equal(refused.stdout.trim(), 'CERTIFICATE_ERROR', refused.stderr)
    // ...and with it, trusted.
    const r = spawnSync(process.execPath, [script, server.url], { encoding: 'utf8', env: { ...process.env, NODE_EXTRA_CA_CERTS: join(dir, 'cert.pem') } })
    assert.equal(r.status, 0, r.stderr)
    assert.deepEqual(JSON.parse(r.stdout), { a: { headId: 'c1' }, head: 'c1', err: 'SANDBOX_SNAPSHOT_STALE_HEAD' })
  })
}
