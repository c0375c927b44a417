/** agents/: agent specs (markdown + frontmatter) and the tool surface a lease allows. */
export { AgentFrontmatterSchema, parseAgentSpec, MAX_SPEC_BYTES, type AgentSpec, type AgentFrontmatter } from './spec.js';
export { loadAgentCatalog, agentCatalogFor, shippedAgentsDir, DEFAULT_AGENT, type AgentCatalog } from './catalog.js';
export { AGENT_TOOLS, AGENT_TOOL_NAMES, AGENT_LOOP_METHODS, TOOL_METHODS, agentMethodSurface, toolSurface, type AgentTool, type ToolSurfaceInput } from './tools.js';
