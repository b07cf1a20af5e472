import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Starts `server` listening (port 0: a free one) and resolves with its origin, `http://host:port`. */
export async function listenOrigin(server: Server, port: number, host: string): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const hostPart = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${hostPart}:${address.port}`;
}
