// Test harness: a real ckptserver built from this repository, a real
// redis-server when one is installed, and fixtures.

import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { connect, createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'

/** The repository root: this file runs from clients/ts/.test-build/. */
export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..')

const cleanups: Array<() => void> = []
process.on('exit', () => {
  for (const f of cleanups.reverse()) {
    try {
      f()
    } catch {
      // best effort at exit
    }
  }
})

function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix))
  cleanups.push(() => rmSync(d, { recursive: true, force: true }))
  return d
}

let binary: string | undefined

/**
 * ckptserverBinary returns $CKPTSERVER_BIN (make test builds it first), or
 * builds ./cmd/ckptserver into a temporary directory, once per process.
 */
export function ckptserverBinary(): string {
  if (binary) return binary
  const fromEnv = process.env['CKPTSERVER_BIN']
  if (fromEnv) return (binary = resolve(fromEnv))
  const out = join(tempDir('ckptserver-bin-'), 'ckptserver')
  const r = spawnSync('go', ['build', '-o', out, './cmd/ckptserver'], { cwd: repoRoot, encoding: 'utf8' })
  if (r.error) throw new Error(`go build ./cmd/ckptserver: ${r.error.message}`)
  if (r.status !== 0) throw new Error(`go build ./cmd/ckptserver failed:\n${r.stdout}${r.stderr}`)
  return (binary = out)
}

/** A running process and how to stop it. */
export interface Running {
  url: string
  stop(): Promise<void>
  output(): string
}

function waitForLine(child: ChildProcess, name: string, pattern: RegExp, timeoutMs: number): Promise<{ match: RegExpMatchArray; output: () => string }> {
  let out = ''
  const output = () => out
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`${name} did not print ${pattern} within ${timeoutMs} ms; output:\n${out}`))
    }, timeoutMs)
    const onData = (chunk: Buffer) => {
      out += chunk.toString('utf8')
      const m = out.match(pattern)
      if (m) {
        clearTimeout(timer)
        resolvePromise({ match: m, output })
      }
    }
    child.stdout?.on('data', onData)
    child.stderr?.on('data', onData)
    child.on('exit', (code, signal) => {
      clearTimeout(timer)
      reject(new Error(`${name} exited (${code ?? signal}) before printing ${pattern}; output:\n${out}`))
    })
    child.on('error', (err) => {
      clearTimeout(timer)
      reject(err)
    })
  })
}

function stopper(child: ChildProcess): () => Promise<void> {
  const stop = () =>
    new Promise<void>((res) => {
      if (child.exitCode !== null || child.signalCode !== null) return res()
      child.once('exit', () => res())
      child.kill('SIGTERM')
      // A server that does not drain within 5 s is killed.
      setTimeout(() => child.kill('SIGKILL'), 5_000).unref()
    })
  cleanups.push(() => child.kill('SIGKILL'))
  return stop
}

/**
 * startServer runs ckptserver on a free loopback port and parses the
 * `listening on http://…` line it prints. args default to --dev; binary
 * to this checkout's (another build, for a before/after benchmark).
 */
export async function startServer(store: string, args: string[] = ['--dev'], binary: string = ckptserverBinary()): Promise<Running> {
  const child = spawn(binary, ['--listen', '127.0.0.1:0', '--store', store, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const stop = stopper(child)
  const { match, output } = await waitForLine(child, 'ckptserver', /listening on (https?:\/\/[^\s"]+)/, 20_000)
  return { url: match[1]!, stop, output }
}

/** A free TCP port on loopback (the listener is closed again; a race with another process is unlikely here). */
export function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer()
    s.once('error', rej)
    s.listen(0, '127.0.0.1', () => {
      const a = s.address()
      const port = typeof a === 'object' && a ? a.port : 0
      s.close(() => res(port))
    })
  })
}

/** A TCP relay in front of a server: what a test sees of the connections and bytes a client sends. */
export interface Relay {
  /** The relay's url with scheme (http or https: the relay passes TLS through). */
  url: (scheme: string) => string
  /** How many connections it accepted. */
  connections: () => number
  /** Every byte the clients sent, as latin1 (readable for plain HTTP). */
  seen: () => string
  close: () => Promise<void>
}

/** relay relays 127.0.0.1:port, counting connections and recording what clients send. */
export async function relay(port: number): Promise<Relay> {
  let n = 0
  let seen = ''
  const server: Server = createServer((down) => {
    n++
    const up = connect(port, '127.0.0.1')
    down.on('data', (d: Buffer) => {
      seen += d.toString('latin1')
    })
    down.pipe(up)
    up.pipe(down)
    down.on('error', () => up.destroy())
    up.on('error', () => down.destroy())
  })
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', res))
  const a = server.address()
  const p = typeof a === 'object' && a ? a.port : 0
  return {
    url: (scheme) => `${scheme}://127.0.0.1:${p}`,
    connections: () => n,
    seen: () => seen,
    close: () => new Promise((res) => server.close(() => res())),
  }
}

/** Why the Redis tests cannot run here, or undefined when redis-server is on PATH. */
export function redisUnavailable(): string | undefined {
  const r = spawnSync('redis-server', ['--version'], { encoding: 'utf8' })
  if (r.error || r.status !== 0) return 'redis-server is not on PATH (apt-get install redis-server, or `make deps`)'
  return undefined
}

/**
 * startRedis runs a throw-away redis-server on a free port in a temporary
 * directory; url is redis://127.0.0.1:PORT. Without persistence, unless
 * aof is set: then an append-only file fsynced every second (appendfsync
 * everysec), as a production Redis would run.
 */
export async function startRedis(aof = false): Promise<Running> {
  const dir = tempDir('ckpt-redis-')
  const port = await freePort()
  const conf = join(dir, 'redis.conf')
  const persistence = aof ? 'appendonly yes\nappendfsync everysec\n' : 'appendonly no\n'
  writeFileSync(conf, `port ${port}\nbind 127.0.0.1\ndir ${dir}\nsave ""\n${persistence}`)
  const child = spawn('redis-server', [conf], { stdio: ['ignore', 'pipe', 'pipe'] })
  const stop = stopper(child)
  const { output } = await waitForLine(child, 'redis-server', /Ready to accept connections/, 20_000)
  return { url: `redis://127.0.0.1:${port}`, stop, output }
}

/**
 * onRedis runs suite against a ckptserver over a throw-away redis-server
 * (keys under prefix, the server started with args), both started before the
 * suite and stopped after it; without redis-server it prints why and records
 * one skipped test.
 */
export function onRedis(prefix: string, args: string[] | undefined, suite: (server: () => Running) => void): void {
  const why = redisUnavailable()
  if (why) {
    console.log(`# skipping the Redis tests: ${why}`)
    test('redis', { skip: why }, () => {})
    return
  }
  let redis: Running
  let server: Running
  before(async () => {
    redis = await startRedis()
    server = await startServer(`${redis.url}?prefix=${prefix}`, args)
  })
  after(async () => {
    await server?.stop()
    await redis?.stop()
  })
  describe('redis', () => suite(() => server))
}

/** onMemAndRedis runs suite on a ckptserver over memstore, then through onRedis. */
export function onMemAndRedis(prefix: string, args: string[] | undefined, suite: (backend: string, server: () => Running) => void): void {
  let mem: Running
  before(async () => {
    mem = await startServer('mem', args)
  })
  after(async () => mem?.stop())
  describe('memstore', () => suite('mem', () => mem))
  onRedis(prefix, args, (server) => suite('redis', server))
}

/** writeTokens writes a --tokens file and returns its path. */
/**
 * requestHeaders are the headers of a getHead made with the options of the
 * request tests (token 'tok', namespace 'a/ä 😀', a lease of 100 ms renewed
 * after 25, the clock at 1234.5): the same through fetch and through each
 * Node transport, which adds only its connection headers.
 */
export const requestHeaders: Readonly<Record<string, string>> = {
  'content-type': 'application/json',
  accept: 'application/json',
  authorization: 'Bearer tok',
  'ckpt-namespace': 'a%2F%C3%A4%20%F0%9F%98%80',
  'ckpt-lease-duration-ms': '100',
  'ckpt-renew-after-ms': '25',
  'ckpt-now': '1234.5',
}

export function writeTokens(lines: string[]): string {
  const f = join(tempDir('ckpt-tokens-'), 'tokens.txt')
  writeFileSync(f, lines.join('\n') + '\n')
  return f
}

// Fixtures.

/** A blob key of the files kind, made from n. */
export function fileKey(n: number): string {
  return `sandbox-files/sha256/${n.toString(16).padStart(64, '0')}`
}

/** A blob key of the artifacts kind, made from n. */
export function artifactKey(n: number): string {
  return `sandbox-artifacts/sha256/${n.toString(16).padStart(64, '0')}`
}

export interface Msg {
  role: 'user' | 'assistant'
  content: string
}

/** A checkpoint of thread with one file (blob n) and a conversation that names it. */
export function checkpoint(
  id: string,
  threadId: string,
  parentCheckpointId: string | null,
  createdAt: number,
  blobs: number[] = [],
) {
  return {
    id,
    threadId,
    parentCheckpointId,
    createdAt,
    reason: 'automatic' as const,
    files: [
      { path: 'src', kind: 'dir' as const },
      ...blobs.map((b, i) => ({ path: `src/f${i}.txt`, kind: 'file' as const, blobKey: fileKey(b), size: 10 + i })),
    ],
    conversation: [
      { role: 'user', content: `make ${id}` },
      { role: 'assistant', content: 'done ✓ 😀' },
    ] as Msg[],
    artifacts: [] as Array<{ artifactId: string; name: string; mimeType: string; size: number; blobKey: string; createdAt: number }>,
  }
}

/** The status docs/http-api.md gives each contract code. */
function statusOf(code: string): number {
  if (code === 'SANDBOX_SNAPSHOT_INVALID_ID' || code === 'SANDBOX_SNAPSHOT_INVALID_ENTRY') return 400
  if (code === 'SANDBOX_SNAPSHOT_FORK_SOURCE_NOT_FOUND') return 404
  return 409
}

/**
 * rejects asserts that p rejects with the contract error of code: an Error
 * of class ctor, with that code, TanStack's class name and the status of
 * the code.
 */
export async function rejects(p: Promise<unknown>, ctor: abstract new (...a: never[]) => Error, code: string): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof Error, 'an Error')
    assert.ok(err instanceof ctor, `an instance of ${ctor.name}, got ${(err as Error).name}: ${(err as Error).message}`)
    assert.equal(err.name, ctor.name)
    assert.equal((err as Error & { code?: string }).code, code)
    assert.equal((err as Error & { status?: number }).status, statusOf(code), `the HTTP status of ${code} (docs/http-api.md, Errors)`)
    return true
  })
}
