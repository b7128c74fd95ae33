// The dashboard's build (vite build: dist/dashboard, served by the server at /dashboard) and its
// dev server (vite: hot reload on http://127.0.0.1:5173/dashboard/, with /graphql (HTTP and
// WebSocket), /v1 and /checkout proxied to the API at TOLLGATE_URL, default http://127.0.0.1:8080).
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

const here = path.dirname(fileURLToPath(import.meta.url));
const api = process.env.TOLLGATE_URL ?? 'http://127.0.0.1:8080';

export default defineConfig({
  root: here,
  base: '/dashboard/',
  plugins: [react()],
  build: {
    outDir: path.resolve(here, '../../dist/dashboard'),
    emptyOutDir: true,
    sourcemap: false,
    target: 'es2022',
    chunkSizeWarningLimit: 600,
  },
  server: {
    host: '127.0.0.1',
    port: 5173,
    proxy: {
      '/graphql': { target: api, ws: true, changeOrigin: false },
      '/v1': { target: api },
      '/checkout': { target: api },
    },
  },
});
