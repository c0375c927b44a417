/** mcp/: brig's MCP face — the tools and resources over a Brig, and the stdio transport `brig mcp` serves. */
export { createMcpServer, toolsFor, ALL_TOOLS, type McpServerOptions } from './server.js';
export { serveStdio, type StdioSession } from './stdio.js';
