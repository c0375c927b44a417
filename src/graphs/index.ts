/**
 * graphs/: execution graphs (issue 25) — the `graph: brig/v1` spec and its one schema, define
 * time (order, checks), the pure scheduler, the graph record and its store, the service that
 * runs every node attempt as an ordinary spawn through the Supervisor, and the end envelope.
 */
export { GraphSpecSchema, parseGraphSpec } from './spec.js';
export { defineGraph, defineGraphText, leaves, taskOf, topoOrder, type DefineOptions } from './define.js';
export { expand } from './macros.js';
export { readField, tally, tallyLine, type Ballot } from './tally.js';
export { evaluateWhen, graphEnd, isEnded, plan, tripped, type PlanInput, type PlanStep, type WhenVerdict } from './plan.js';
export { GraphStore, GRAPH_FILES, SNAPSHOT_EVERY } from './store.js';
export { explainGraph, renderGraphExplain, whenText } from './explain.js';
export { definitionOf, GraphService, newGraphId, nodeResultOf, parseItems, requestOf, stopHolds, type GraphPorts, type GraphWaitOptions, type RunGraphOptions } from './service.js';
export { graphEnvelope, manifestRows } from './envelope.js';
