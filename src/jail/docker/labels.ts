/**
 * Labels brig puts on every container, volume and image it makes. Sweeps select by these
 * and nothing else, so brig never touches an engine object it did not create.
 */
export const LABELS = Object.freeze({
  managed: 'brig.managed',
  /** Which supervisor (one per BRIG_HOME) made it: sweeps never cross owners. */
  owner: 'brig.owner',
  runId: 'brig.run',
  rootRunId: 'brig.root',
  leaseId: 'brig.lease',
  image: 'brig.image',
  imageHash: 'brig.image.hash',
});
