/**
 * Starts a server listening and settles when it does: a failure to listen (EADDRINUSE, a path too
 * long, EACCES) rejects instead of becoming an uncaught 'error', and once listening, later errors
 * (EMFILE on accept, …) are swallowed here — the server's connections report their own.
 */
import type net from 'node:net';

export async function listenOn(server: net.Server, ...at: [path: string] | [port: number, host: string]): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    const done = () => {
      server.off('error', reject);
      resolve();
    };
    if (at.length === 1) server.listen(at[0], done);
    else server.listen(at[0], at[1], done);
  });
  server.on('error', () => {});
}
