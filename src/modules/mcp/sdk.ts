// What routes.ts uses of the MCP SDK at run time, in one module imported by the first /mcp request:
// the SDK (with zod) is tens of megabytes that most processes, serving no agent, never need
// (issue 41 item 4, idle memory).
export {
  createMcpHandler,
  isLegacyRequest,
  ProtocolError,
  ProtocolErrorCode,
  Server,
  WebStandardStreamableHTTPServerTransport,
} from '@modelcontextprotocol/server';
