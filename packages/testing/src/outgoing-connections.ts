import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { Socket } from 'node:net';

export interface ConnectionAttempt {
  address: string;
  port: number;
  at: number;
}

export interface OutgoingConnectionRecorder {
  /** Every address and port this process tried to connect to while recording. */
  attempts: ConnectionAttempt[];
  stop(): void;
}

/**
 * Records the TCP connection attempts of this process made through `net.connect` (undici's
 * connector, ioredis), whatever the address: a hostile target on another machine (10.0.0.1,
 * 169.254.169.254) cannot be observed by a local canary, but the attempt to reach it is seen
 * here. Sockets constructed directly with `new net.Socket()` (pg) are not seen.
 */
export function recordOutgoingConnections(): OutgoingConnectionRecorder {
  const attempts: ConnectionAttempt[] = [];
  const onSocket = (message: unknown) => {
    const { socket } = message as { socket: Socket };
    socket.on('connectionAttempt', (address: string, port: number) => {
      attempts.push({ address, port, at: Date.now() });
    });
  };
  subscribe('net.client.socket', onSocket);
  return {
    attempts,
    stop: () => unsubscribe('net.client.socket', onSocket),
  };
}
