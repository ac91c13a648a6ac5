// The TLS options of the client against a ckptserver serving HTTPS with a
// certificate a throw-away CA signed (openssl): `ca` and `agent` trust it
// without NODE_EXTRA_CA_CERTS, and a certificate that does not verify (no
// CA given, or another CA) fails at once with CERTIFICATE_ERROR, after one
// connection, over node:https and over fetch alike. The server sits behind
// a TCP relay here that counts the connections, so a retry would show.

import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { Agent } from 'node:https'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createCheckpointStore, CkptstoreError } from '@ckptstore/client'
import { checkpoint, relay, startServer, type Relay, type Running } from './helpers.js'

const openssl = spawnSync('openssl', ['version'], { encoding: 'utf8' })
const why = openssl.error || openssl.status !== 0 ? 'openssl is not on PATH: no CA to sign a certificate with' : undefined

function run(args: string[]): void {
  const r = spawnSync('openssl', args, { encoding: 'utf8' })
  assert.equal(r.status, 0, `openssl ${args.join(' ')}: ${r.stderr}`)
}

/** newCA writes a CA's key and certificate into dir as NAME.key and NAME.pem. */
function newCA(dir: string, name: string): void {
  run(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1', '-subj', `/CN=${name}`,
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign',
    '-keyout', join(dir, `${name}.key`), '-out', join(dir, `${name}.pem`)])
}

if (why) {
  test('TLS options', { skip: why }, () => {})
} else {
  let dir: string
  let server: Running
  let tcp: Relay
  let ca: string
  let otherCA: string
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ckpt-ca-'))
    newCA(dir, 'ca')
    newCA(dir, 'other')
    run(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-subj', '/CN=127.0.0.1',
      '-keyout', join(dir, 'server.key'), '-out', join(dir, 'server.csr')])
    writeFileSync(join(dir, 'server.ext'), 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n')
    run(['x509', '-req', '-in', join(dir, 'server.csr'), '-CA', join(dir, 'ca.pem'), '-CAkey', join(dir, 'ca.key'), '-CAcreateserial',
      '-days', '1', '-extfile', join(dir, 'server.ext'), '-out', join(dir, 'server.pem')])
    ca = readFileSync(join(dir, 'ca.pem'), 'utf8')
    otherCA = readFileSync(join(dir, 'other.pem'), 'utf8')
    server = await startServer('mem', ['--dev', '--tls-cert', join(dir, 'server.pem'), '--tls-key', join(dir, 'server.key')])
    tcp = await relay(Number(new URL(server.url).port))
  })
  after(async () => {
    await tcp?.close()
    await server?.stop()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  test('ca: the server is trusted by a private CA given as PEM, over node:https', async () => {
    const store = createCheckpointStore({ url: tcp.url('https'), namespace: 'tls-ca', ca })
    const w = await store.acquireWriter('t')
    assert.deepEqual(await store.append({ checkpoint: checkpoint('c1', 't', null, 1), expectedHeadId: null, writer: w }), { headId: 'c1' })
    assert.equal(await store.getHead('t'), 'c1')
    // Another store given the same bundle shares the first one's keep-alive connection.
    const before = tcp.connections()
    assert.equal(await createCheckpointStore({ url: tcp.url('https'), namespace: 'tls-ca', ca }).getHead('t'), 'c1')
    assert.equal(tcp.connections(), before, 'a store with the same CA string dialled again')
    // As bytes and as a list too.
    assert.equal(await createCheckpointStore({ url: tcp.url('https'), namespace: 'tls-ca', ca: [new TextEncoder().encode(ca)] }).getHead('t'), 'c1')
    await w.release()
  })

  test('agent: a node:https Agent of the caller, with the CA', async () => {
    const agent = new Agent({ keepAlive: true, ca })
    try {
      const store = createCheckpointStore({ url: tcp.url('https'), namespace: 'tls-ca', agent })
      assert.equal(await store.getHead('t'), 'c1')
    } finally {
      agent.destroy()
    }
  })

  test('a certificate that does not verify fails at once, with one connection: never retried', async () => {
    const cases: Array<[string, Parameters<typeof createCheckpointStore>[0], RegExp]> = [
      ['node:https, no CA', { url: tcp.url('https') }, /UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY/],
      ['node:https, another CA', { url: tcp.url('https'), ca: otherCA }, /UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY/],
      ['fetch, no CA', { url: tcp.url('https'), fetch: globalThis.fetch }, /UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY/],
      ['node:https, the name does not match', { url: tcp.url('https').replace('127.0.0.1', 'localhost'), ca }, /ERR_TLS_CERT_ALTNAME_INVALID/],
    ]
    for (const [name, options, code] of cases) {
      const before = tcp.connections()
      const err = await createCheckpointStore({ namespace: 'tls-refused', ...options }).getHead('t').then(
        () => assert.fail(`${name}: the call succeeded`),
        (e: unknown) => e,
      )
      assert.ok(err instanceof CkptstoreError, `${name}: ${String(err)}`)
      assert.equal(err.code, 'CERTIFICATE_ERROR', `${name}: ${err.message}`)
      assert.match(err.message, code, name)
      assert.equal(tcp.connections() - before, 1, `${name}: ${tcp.connections() - before} connections for one call (default maxAttempts 6): the certificate error was retried`)
    }
  })

  test('ca and agent need the node:https transport and an https:// url', () => {
    assert.throws(() => createCheckpointStore({ url: tcp.url('https'), ca, fetch: globalThis.fetch }), /options\.ca needs the node:http\(s\) transport/)
    assert.throws(() => createCheckpointStore({ url: tcp.url('http'), ca }), /options\.ca is for an https:\/\/ url/)
    assert.throws(() => createCheckpointStore({ url: tcp.url('https'), ca, agent: new Agent() }), /exclude each other/)
  })
}
