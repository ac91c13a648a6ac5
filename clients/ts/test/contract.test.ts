// What TanStack's harnesses do with a store that the other tests do not:
// attach a rejection handler late (the fork kit), and sweep a bucket with
// only listBlobReferences (the contract page's nightly cron). On memstore,
// and on a real redis-server when one is installed.

import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createCheckpointStore, type CheckpointStoreClient } from '@ckptstore/client'
import { artifactKey, checkpoint, fileKey, redisUnavailable, startRedis, startServer, type Running } from './helpers.js'

const here = dirname(fileURLToPath(import.meta.url))

/** The bucket side of the page's sweep: keys with their upload times, listed by prefix. */
class Bucket {
  readonly objects = new Map<string, number>()
  put(key: string, uploadedAt: number) {
    this.objects.set(key, uploadedAt)
  }
  async list(prefix: string): Promise<Array<{ key: string; uploadedAt: number }>> {
    return [...this.objects].filter(([k]) => k.startsWith(prefix)).map(([key, uploadedAt]) => ({ key, uploadedAt }))
  }
  async delete(key: string): Promise<void> {
    this.objects.delete(key)
  }
}

/**
 * sweep is the contract page's sweepSandboxBlobs, as a harness writes it:
 * list the keys under sandbox-files/ and sandbox-artifacts/, and delete
 * each one no checkpoint uses that is older than olderThanMs. It reads the
 * store through listBlobReferences alone.
 */
async function sweep(input: {
  checkpoints: Pick<CheckpointStoreClient, 'listBlobReferences'>
  blobs: { list: (prefix: string) => Promise<Array<{ key: string; uploadedAt: number }>>; delete: (key: string) => Promise<void> }
  olderThanMs: number
  now: number
}): Promise<string[]> {
  const used = new Set<string>()
  for (const r of await input.checkpoints.listBlobReferences()) if (r.references > 0) used.add(r.key)
  const deleted: string[] = []
  for (const prefix of ['sandbox-files/', 'sandbox-artifacts/']) {
    for (const { key, uploadedAt } of await input.blobs.list(prefix)) {
      if (used.has(key) || input.now - uploadedAt < input.olderThanMs) continue
      await input.blobs.delete(key)
      deleted.push(key)
    }
  }
  return deleted.sort()
}

function suite(backend: string, server: () => Running) {
  describe(`${backend}: a handler attached late`, () => {
    test('under --unhandled-rejections=throw, the fork kit\'s late .rejects sees every rejection and Node reports none', () => {
      const r = spawnSync(process.execPath, ['--unhandled-rejections=throw', join(here, 'late-handler.js'), server().url], {
        encoding: 'utf8',
        timeout: 60_000,
      })
      assert.equal(r.status, 0, `late-handler exited ${r.status ?? r.signal}:\n${r.stdout}${r.stderr}`)
      assert.doesNotMatch(r.stderr, /unhandled/i)
      assert.equal(r.stdout.match(/^ok /gm)?.length, 31, r.stdout)
      assert.match(r.stdout, /^done$/m)
    })
  })

  describe(`${backend}: the page's sweep`, () => {
    test('deletes exactly the old blobs no checkpoint uses, and none in use', async () => {
      const store = createCheckpointStore({ url: server().url })
      const day = 24 * 60 * 60 * 1000
      const now = 100 * day
      const old = now - 2 * day
      const bucket = new Bucket()

      // Two threads of checkpoints; thread a is pruned to its newest two.
      const wa = await store.acquireWriter('a')
      let head: string | null = null
      for (let i = 1; i <= 5; i++) {
        const cp = checkpoint(`a${i}`, 'a', head, i, [i, 100]) // blob 100 in every one
        if (i === 5) cp.artifacts.push({ artifactId: 'r', name: 'r.txt', mimeType: 'text/plain', size: 1, blobKey: artifactKey(5), createdAt: 5 })
        if (i === 1) cp.artifacts.push({ artifactId: 'q', name: 'q.txt', mimeType: 'text/plain', size: 1, blobKey: artifactKey(1), createdAt: 1 })
        head = (await store.append({ checkpoint: cp, expectedHeadId: head, writer: wa })).headId
      }
      const wb = await store.acquireWriter('b')
      await store.append({ checkpoint: checkpoint('b1', 'b', null, 1, [2, 200]), expectedHeadId: null, writer: wb })
      const fork = await store.acquireWriter('f')
      await store.forkFromCheckpoint({ sourceThreadId: 'a', sourceCheckpointId: 'a3', destinationThreadId: 'f', destinationCheckpointId: 'f1', createdAt: 9, writer: fork })
      assert.deepEqual(await store.deleteCheckpoints({ threadId: 'a', keep: 2, writer: wa }), { deleted: ['a1', 'a2', 'a3'] })

      // Every blob a capture ever uploaded, long ago; and the keys the sweep must leave.
      for (const n of [1, 2, 3, 4, 5, 100, 200]) bucket.put(fileKey(n), old)
      bucket.put(artifactKey(1), old)
      bucket.put(artifactKey(5), old)
      bucket.put(fileKey(7), old) // never referenced
      bucket.put(fileKey(8), now - 60_000) // unreferenced, but younger than olderThanMs: a capture in flight
      bucket.put('other/keep-me', old) // outside the sweep's prefixes

      const refs = await store.listBlobReferences()
      assert.ok(refs.length > 0 && refs.every((r) => typeof r.key === 'string' && r.references > 0), 'references are {key, references}')
      const deleted = await sweep({ checkpoints: store, blobs: bucket, olderThanMs: day, now })

      // a1 (blob 1, artifact 1) and a2 (blob 2, but b1 uses it) were pruned;
      // a3 was pruned but the fork root f1 holds blob 3 and blob 100.
      assert.deepEqual(deleted, [artifactKey(1), fileKey(1), fileKey(7)].sort())
      assert.deepEqual(
        [...bucket.objects.keys()].sort(),
        [artifactKey(5), fileKey(2), fileKey(3), fileKey(4), fileKey(5), fileKey(8), fileKey(100), fileKey(200), 'other/keep-me'].sort(),
      )
      for (const r of refs) assert.ok(bucket.objects.has(r.key), `${r.key} is in use and stays`)
      // A second sweep finds nothing more.
      assert.deepEqual(await sweep({ checkpoints: store, blobs: bucket, olderThanMs: day, now }), [])
    })
  })
}

{
  let server: Running
  before(async () => {
    server = await startServer('mem', ['--dev', '--bucket', 'mem://'])
  })
  after(async () => server?.stop())
  suite('mem', () => server)
}

{
  const why = redisUnavailable()
  if (why) {
    test('redis: late handlers and the sweep', { skip: why }, () => {})
  } else {
    let redis: Running
    let server: Running
    before(async () => {
      redis = await startRedis()
      server = await startServer(`${redis.url}?prefix=tscontract`, ['--dev', '--bucket', 'mem://'])
    })
    after(async () => {
      await server?.stop()
      await redis?.stop()
    })
    suite('redis', () => server)
  }
}
