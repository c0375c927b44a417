/**
 * refs/: the drill-in surface over the result store and the slicer — the coordinator's
 * RefService (list, the five slice verbs, the envelope) and a child's ChildRefs (its
 * descendants' refs only, through the broker). Below runs/: it reads run records through a
 * getRun function it is given.
 */
export { RefService } from './ref-service.js';
export type { RefServiceDeps } from './ref-service.js';
export { ChildRefs, isDescendant, fitReply, handleOf, CHILD_REF_METHODS, CHILD_REPLY_BYTES, CHILD_SLICE_LIMITS, MAX_LISTED_REFS } from './child-refs.js';
export type { ChildRefsDeps, ChildRefCall } from './child-refs.js';
