// Loads a TypeScript source file of a system under test as an ES module: strips its types with the TypeScript
// compiler installed next to it (no type checking), rewrites the import specifiers it is given (to stand-ins for
// modules outside the file that the functions under test never call), optionally exports names the file keeps
// private, and imports the result. The module is written beside the node_modules it needs, so `effect` and the
// like resolve there. Used by conformance/cloudflare-os/ and conformance/effect-agent/ (see conformance/README.md).
import { createRequire } from 'node:module';
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

export async function loadTs(env, source, { rewrite = {}, expose = [], name } = {}) {
  const require = createRequire(path.join(env, 'package.json'));
  const ts = require('typescript');
  let code = ts.transpileModule(readFileSync(source, 'utf8'), {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: false },
  }).outputText;
  for (const [from, to] of Object.entries(rewrite)) {
    const before = code;
    code = code.split(`from "${from}"`).join(`from "${to}"`);
    if (code === before) throw new Error(`${source}: no import from "${from}" to rewrite`);
  }
  if (expose.length) code += `\nexport { ${expose.join(', ')} };\n`;
  const dir = path.join(env, 'loaded');
  mkdirSync(dir, { recursive: true });
  const out = path.join(dir, name ?? path.basename(source).replace(/\.ts$/, '.mjs'));
  writeFileSync(out, code);
  return import(pathToFileURL(out).href);
}

export function stub(env, name, code) {
  const dir = path.join(env, 'loaded');
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, name), code);
  return `./${name}`;
}
