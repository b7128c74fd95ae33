// The gateways benchmark's floor: a bare node:http forwarder. Every request is passed to the
// upstream (FORWARD_TO, an origin) on keep-alive connections, method, path, headers and body as
// they are, and the answer is piped back as it comes. No parsing, no checks, nothing recorded.
// Prints one JSON line `{"url": ...}` once it listens (PORT, default any free port).
import { Agent, createServer, request } from 'node:http';

const target = new URL(process.env.FORWARD_TO!);
const agent = new Agent({ keepAlive: true, maxSockets: 256 });

const server = createServer((req, res) => {
  const headers = { ...req.headers, host: target.host };
  const upstream = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers, agent }, (answer) => {
    res.writeHead(answer.statusCode ?? 502, answer.headers);
    answer.pipe(res);
  });
  upstream.on('error', () => {
    if (!res.headersSent) res.writeHead(502);
    res.end();
  });
  req.pipe(upstream);
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address() as { port: number };
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${address.port}` })}\n`);
});
process.on('SIGTERM', () => process.exit(0));
