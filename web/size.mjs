// Prints each built file's size, raw and gzipped (level 9), and the total: the bundle
// size docs/ui.md states. `npm run size` after `npm run build`.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { gzipSync } from "node:zlib";

const root = new URL("./dist/", import.meta.url).pathname;
const files = [];
const walk = (dir) => {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p);
    else files.push(p);
  }
};
walk(root);
let raw = 0;
let gz = 0;
for (const f of files.sort()) {
  const bytes = readFileSync(f);
  const z = gzipSync(bytes, { level: 9 }).length;
  raw += bytes.length;
  gz += z;
  console.log(`${relative(root, f).padEnd(32)} ${String(bytes.length).padStart(8)} B  ${String(z).padStart(7)} B gzipped`);
}
console.log(`${"total".padEnd(32)} ${String(raw).padStart(8)} B  ${String(gz).padStart(7)} B gzipped`);
