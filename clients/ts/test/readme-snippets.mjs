// Writes every ```ts block of the repository's README.md and of this
// package's README.md to .readme-snippets/, one module per block, for
// `tsc -p test/tsconfig.readme.json` to type-check as a user's code would
// be: importing '@ckptstore/client' by name (the package's own exports and
// types), strict, with exactOptionalPropertyTypes and @types/node. The
// READMEs stay the one copy of their examples: a snippet that stops
// compiling fails `npm test`.

import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const pkg = join(dirname(fileURLToPath(import.meta.url)), '..')
const out = join(pkg, '.readme-snippets')
rmSync(out, { recursive: true, force: true })
mkdirSync(out)
let n = 0
for (const [name, file] of [['root', join(pkg, '..', '..', 'README.md')], ['client', join(pkg, 'README.md')]]) {
  const text = readFileSync(file, 'utf8')
  let i = 0
  for (const m of text.matchAll(/^```ts\n([\s\S]*?)^```$/gm)) {
    i++
    // `export {}` makes a block without imports a module too, so that two
    // blocks' top-level names never meet.
    writeFileSync(join(out, `${name}-${i}.ts`), `// ${file.endsWith(join('ts', 'README.md')) ? 'clients/ts/README.md' : 'README.md'}, TypeScript block ${i}\n${m[1]}export {}\n`)
    n++
  }
  if (i === 0) throw new Error(`${file}: no \`\`\`ts block: the README changed its form, or this script reads the wrong file`)
}
console.log(`readme-snippets: ${n} TypeScript blocks written to .readme-snippets/`)
