import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';

export interface CanaryConnection {
  /** The canary address and port that was reached, e.g. `127.0.0.1:41234` or `[::1]:41234`. */
  local: string;
  remote: string;
  at: number;
}

export interface CanaryListener {
  /** One port, the same on every address the canary listens on. */
  port: number;
  /** 127.0.0.1, ::1 when this host has IPv6 loopback, and any extra addresses asked for. */
  addresses: string[];
  hasIPv6: boolean;
  /** Every connection accepted so far; an SSRF test expects this to stay empty. */
  connections: CanaryConnection[];
  close(): Promise<void>;
}

export interface CanaryOptions {
  /** More loopback addresses to listen on with the same port (Linux routes all of 127/8 locally). */
  extraAddresses?: string[];
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host, exclusive: true }, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

/**
 * A TCP listener standing in for an internal service an attacker would like the crawler to
 * reach: it records every connection and answers it with a tiny HTTP 200, so that a request
 * which slips through shows up as a success rather than as a refused connection. It listens on
 * 127.0.0.1 and ::1 (and `extraAddresses`) with one port, so every spelling of loopback in a
 * hostile URL lands on it.
 */
export async function startCanary(options: CanaryOptions = {}): Promise<CanaryListener> {
  const connections: CanaryConnection[] = [];
  const sockets = new Set<Socket>();
  const onConnection = (socket: Socket) => {
    const local =
      socket.localFamily === 'IPv6'
        ? `[${socket.localAddress ?? '?'}]:${socket.localPort ?? '?'}`
        : `${socket.localAddress ?? '?'}:${socket.localPort ?? '?'}`;
    connections.push({ local, remote: socket.remoteAddress ?? '?', at: Date.now() });
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    socket.end('HTTP/1.1 200 OK\r\ncontent-length: 6\r\nconnection: close\r\n\r\ncanary');
  };

  // The same free port on every address: take one on 127.0.0.1, then try it on the others, and
  // start over with a new port if another process holds it there.
  for (let attempt = 0; attempt < 10; attempt += 1) {
    const servers: Server[] = [];
    const addresses: string[] = [];
    try {
      const first = createServer(onConnection);
      await listen(first, 0, '127.0.0.1');
      servers.push(first);
      addresses.push('127.0.0.1');
      const port = (first.address() as AddressInfo).port;
      let hasIPv6 = true;
      const v6 = createServer(onConnection);
      try {
        await listen(v6, port, '::1');
        servers.push(v6);
        addresses.push('::1');
      } catch (error) {
        // No IPv6 loopback on this host: IPv6 targets must still be refused, just unobserved.
        if ((error as NodeJS.ErrnoException).code !== 'EADDRNOTAVAIL') throw error;
        hasIPv6 = false;
      }
      for (const address of options.extraAddresses ?? []) {
        const extra = createServer(onConnection);
        await listen(extra, port, address);
        servers.push(extra);
        addresses.push(address);
      }
      return {
        port,
        addresses,
        hasIPv6,
        connections,
        async close() {
          for (const socket of sockets) socket.destroy();
          await Promise.all(servers.map(closeServer));
        },
      };
    } catch (error) {
      await Promise.all(servers.map(closeServer));
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
    }
  }
  throw new Error('could not find one free port on every canary address');
}
