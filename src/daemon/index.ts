/** daemon/: the composition root, `brig serve`, a Brig over this process's parts, the operator's services. */
export { compose, type ComposeOptions, type Composed } from './compose.js';
export { startDaemon, type Daemon } from './serve.js';
export { openLocal, openReadParts, openOperator, configOf, type HomeOptions, type LocalOptions } from './open.js';
export { Operator, leaseView, type LeaseView, type PolicyCheck } from './operator.js';
export { explainRun, leaseDecisions, type Explanation } from './explain.js';
export { fleetReport } from './fleet.js';
