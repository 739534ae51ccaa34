// node testing/node/lockcheck.mjs <suite dir>
//
// Exits 0 when <dir>/node_modules holds exactly what <dir>/package-lock.json
// pins, 1 (with the first difference on stderr) when node_modules is missing
// or stale. It compares the lockfile with the hidden lockfile npm writes on
// every install (node_modules/.package-lock.json): every package the lockfile
// pins is installed at that version (optional ones may be absent, as npm skips
// those for other platforms) and nothing else is. Content, not file times, so
// a fresh clone's checkout times and a symlinked node_modules both read right.
import { readFileSync } from 'node:fs';
import path from 'node:path';

const dir = process.argv[2];
if (!dir) {
  console.error('usage: node lockcheck.mjs <dir with package-lock.json>');
  process.exit(2);
}

function packages(file) {
  try {
    return JSON.parse(readFileSync(file, 'utf8')).packages ?? {};
  } catch (err) {
    if (err.code === 'ENOENT') return null;
    throw err;
  }
}

const want = packages(path.join(dir, 'package-lock.json'));
const have = packages(path.join(dir, 'node_modules', '.package-lock.json'));
if (want === null) fail('no package-lock.json');
if (have === null) fail('node_modules is missing');

for (const [key, pkg] of Object.entries(want)) {
  if (key === '' || pkg.link) continue;
  const got = have[key];
  if (!got) {
    if (pkg.optional) continue;
    fail(`${key} is not installed`);
  }
  if (got.version !== pkg.version) fail(`${key} is ${got.version}, the lockfile pins ${pkg.version}`);
}
for (const key of Object.keys(have)) {
  if (!(key in want)) fail(`${key} is installed but not in the lockfile`);
}

function fail(reason) {
  console.error(reason);
  process.exit(1);
}
