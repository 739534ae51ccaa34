// Serves adk-web, the dev UI bundled in @google/adk-devtools (dist/browser),
// from its own port, as a static site. The bundle reads its backend from
// ./assets/config/runtime-config.json ({"backendUrl": ""} means same origin);
// this server answers that file with the gateway's origin instead, leaving
// node_modules untouched.
import http from 'node:http';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);

/** dist/browser of the installed @google/adk-devtools (its main entry is dist/cjs/index.js). */
export const webRoot = path.join(path.dirname(path.dirname(require.resolve('@google/adk-devtools'))), 'browser');

const types = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
};

export class WebUI {
  /** Listens on 127.0.0.1:0; backendUrl can be set (or changed) later. */
  async start() {
    this.backendUrl = '';
    this.requests = [];
    this.server = http.createServer((req, res) => this.serve(req, res));
    await new Promise((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.origin = `http://127.0.0.1:${this.server.address().port}`;
  }

  async serve(req, res) {
    const { pathname } = new URL(req.url, this.origin);
    this.requests.push(pathname);
    if (pathname.endsWith('/assets/config/runtime-config.json')) {
      res.writeHead(200, { 'content-type': types['.json'], 'cache-control': 'no-store' });
      res.end(JSON.stringify({ backendUrl: this.backendUrl }));
      return;
    }
    const file = path.join(webRoot, path.normalize(decodeURIComponent(pathname)));
    if (!file.startsWith(webRoot + path.sep) && file !== webRoot) {
      res.writeHead(403).end();
      return;
    }
    try {
      const body = await readFile(file);
      res.writeHead(200, { 'content-type': types[path.extname(file)] ?? 'application/octet-stream' });
      res.end(body);
    } catch {
      // The Angular app's own routes (and "/") get index.html.
      const body = await readFile(path.join(webRoot, 'index.html'));
      res.writeHead(200, { 'content-type': types['.html'] });
      res.end(body);
    }
  }

  async stop() {
    if (!this.server) return;
    this.server.closeAllConnections?.();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
