/**
 * Labels brig puts on every container, volume and image it makes. Sweeps select by these
 * and nothing else, so brig never touches an engine object it did not create.
 */
export const LABELS = Object.freeze({
  managed: 'dev.brig.managed',
  /** Which supervisor (one per BRIG_HOME) made it: sweeps never cross owners. */
  owner: 'dev.brig.owner',
  runId: 'dev.brig.run-id',
  rootRunId: 'dev.brig.root-run-id',
  leaseId: 'dev.brig.lease-id',
  image: 'dev.brig.image',
  imageHash: 'dev.brig.image-hash',
});
