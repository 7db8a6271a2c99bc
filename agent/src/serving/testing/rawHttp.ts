/**
 * Test helper: one HTTP request with exactly the headers given, Host included (node:http
 * sends ours instead of the URL's), as a browser page could cause it: the status and the
 * OpenAI error of the answer, if it is one.
 */
import { request } from 'node:http';

export interface RawAnswer {
  status: number;
  error: { message: string; code: string | null } | undefined;
}

export function rawRequest(base: string, method: string, path: string, headers: Record<string, string>, body?: string): Promise<RawAnswer> {
  const url = new URL(path, base);
  const length = body === undefined ? {} : { 'content-length': String(Buffer.byteLength(body)) };
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path: url.pathname, method, headers: { ...headers, ...length } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        let error: RawAnswer['error'];
        try {
          error = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { error?: RawAnswer['error'] }).error;
        } catch {
          error = undefined; // not JSON (metrics text, an SSE stream)
        }
        resolve({ status: res.statusCode ?? 0, error });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}
