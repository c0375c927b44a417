/**
 * `brig mcp`'s transport: the MCP server over this process's stdin and stdout. stdout is the
 * protocol, nothing else may be written there; the caller logs to stderr. Resolves `closed`
 * when the client goes away (stdin ends, or the transport closes) so the caller can release
 * what it holds.
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';

export interface StdioSession {
  /** Resolves once the client has gone (stdin ended or the transport closed). */
  closed: Promise<void>;
  close(): Promise<void>;
}

export async function serveStdio(server: McpServer, io: { stdin: NodeJS.ReadableStream; stdout: NodeJS.WritableStream; onError?: (e: Error) => void }): Promise<StdioSession> {
  const transport = new StdioServerTransport(io.stdin as never, io.stdout as never);
  let done!: () => void;
  const closed = new Promise<void>((resolve) => (done = resolve));
  // The SDK's transport does not notice the end of stdin by itself: a client that closes its
  // end (the usual way to stop a stdio server) must end the session.
  const onEnd = () => done();
  io.stdin.once('end', onEnd);
  io.stdin.once('close', onEnd);
  transport.onerror = (e) => io.onError?.(e);
  await server.connect(transport);
  // connect() took over the transport's callbacks; chain ours after the server's.
  const serverOnClose = transport.onclose;
  transport.onclose = () => {
    serverOnClose?.();
    done();
  };
  return {
    closed,
    async close() {
      io.stdin.off('end', onEnd);
      io.stdin.off('close', onEnd);
      await server.close();
      done();
    },
  };
}
