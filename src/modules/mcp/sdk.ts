// What routes.ts uses of the MCP SDK, in one module it imports when the first /mcp request comes.
export { Server } from '@modelcontextprotocol/sdk/server/index.js';
export { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
export {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
} from '@modelcontextprotocol/sdk/types.js';
